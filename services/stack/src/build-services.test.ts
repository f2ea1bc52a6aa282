import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { describe, expect, it } from "vitest";
import { BUNDLED_SERVICES, buildServices, bundlePath } from "./build-services.ts";

// What the bundles must be for `node services/<name>/dist/main.mjs` to run without tsx.
// That they do run is the fault-injection test's business (process-stack.ts starts them).

/** Packages a service loads only when it uses them (an import() in the source): never at start. */
const LOADED_ON_USE = ["kafkajs", "@electric-sql/pglite", "@aws-sdk/client-s3", "sharp", "ai", "@ai-sdk/openai", "@ai-sdk/openai-compatible", "@ai-sdk/google"];

const STATIC_IMPORT = /(?:^|\n)import\s(?:[^;]*?from\s*)?"([^"]+)"/g;
const DYNAMIC_IMPORT = /import\("([^"]+)"\)/g;

/** The specifiers a bundle file imports statically and through import(). */
function importsOf(file: string): { statics: string[]; dynamics: string[] } {
  const code = readFileSync(file, "utf8");
  return { statics: [...code.matchAll(STATIC_IMPORT)].map((m) => m[1]!), dynamics: [...code.matchAll(DYNAMIC_IMPORT)].map((m) => m[1]!) };
}

/** What loading main.mjs loads at once: the packages its static imports reach, through its chunks; and every file reachable at all. */
function staticClosure(main: string): { packages: Set<string>; files: Set<string> } {
  const packages = new Set<string>();
  const files = new Set<string>();
  const visit = (file: string, atStart: boolean) => {
    const key = `${file}\n${atStart}`;
    if (files.has(key)) return;
    files.add(key);
    const { statics, dynamics } = importsOf(file);
    for (const [specifier, staticImport] of [...statics.map((s) => [s, true] as const), ...dynamics.map((s) => [s, false] as const)]) {
      if (specifier.startsWith("./")) visit(join(dirname(file), specifier), atStart && staticImport);
      else if (atStart && staticImport) packages.add(specifier);
    }
  };
  visit(main, true);
  return { packages, files: new Set([...files].map((key) => key.split("\n")[0]!)) };
}

describe("npm run build", () => {
  it("bundles every service's workspace code, leaves node_modules packages external, and keeps lazy imports lazy", async () => {
    const files = await buildServices();
    expect(files).toEqual(BUNDLED_SERVICES.map(bundlePath));
    for (const main of files) {
      const { packages, files: reachable } = staticClosure(main);
      for (const file of reachable) {
        expect(existsSync(file), file).toBe(true);
        const { statics, dynamics } = importsOf(file);
        expect([...statics, ...dynamics].filter((specifier) => specifier.startsWith("@orvado/") || specifier.endsWith(".ts")), file).toEqual([]);
      }
      expect(packages, main).toContain("pino");
      // esbuild without code splitting inlines an import()ed module and hoists its packages to the top.
      expect(LOADED_ON_USE.filter((name) => packages.has(name)), main).toEqual([]);
      expect(readFileSync(main, "utf8"), main).toContain("//# sourceMappingURL=main.mjs.map");
    }
    // The lazy ones are still there, behind import(): generation reaches kafkajs, PGlite, S3, sharp and the providers.
    const generation = staticClosure(bundlePath("generation")).files;
    const lazy = [...generation].flatMap((file) => importsOf(file).statics.concat(importsOf(file).dynamics));
    for (const name of ["kafkajs", "@electric-sql/pglite", "@aws-sdk/client-s3", "sharp", "@ai-sdk/openai-compatible"]) expect(lazy, name).toContain(name);
  });
});
