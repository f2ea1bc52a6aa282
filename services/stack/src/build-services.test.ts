import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { BUNDLED_SERVICES, buildServices, bundlePath } from "./build-services.ts";
import { buildStartBundle } from "./build-start.ts";

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

/**
 * What loading main.mjs reaches: the packages its static imports load at once, through its chunks,
 * and every file reachable at all (through import() too) with all the specifiers it imports.
 */
function staticClosure(main: string): { packages: Set<string>; files: Map<string, string[]> } {
  const packages = new Set<string>();
  const files = new Map<string, string[]>();
  const visitedAtStart = new Set<string>();
  const visit = (file: string, atStart: boolean) => {
    if (files.has(file) && (!atStart || visitedAtStart.has(file))) return;
    if (atStart) visitedAtStart.add(file);
    const { statics, dynamics } = importsOf(file);
    files.set(file, [...statics, ...dynamics]);
    for (const [specifier, staticImport] of [...statics.map((s) => [s, true] as const), ...dynamics.map((s) => [s, false] as const)]) {
      if (specifier.startsWith("./")) visit(join(dirname(file), specifier), atStart && staticImport);
      else if (atStart && staticImport) packages.add(specifier);
    }
  };
  visit(main, true);
  return { packages, files };
}

describe("npm run build", () => {
  it("bundles every service's workspace code, leaves node_modules packages external, and keeps lazy imports lazy", async () => {
    const files = await buildServices();
    expect(files).toEqual(BUNDLED_SERVICES.map(bundlePath));
    for (const main of files) {
      const { packages, files: reachable } = staticClosure(main);
      for (const [file, specifiers] of reachable) {
        expect(existsSync(file), file).toBe(true);
        expect(specifiers.filter((specifier) => specifier.startsWith("@orvado/") || specifier.endsWith(".ts")), file).toEqual([]);
      }
      expect(packages, main).toContain("pino");
      // esbuild without code splitting inlines an import()ed module and hoists its packages to the top.
      expect(LOADED_ON_USE.filter((name) => packages.has(name)), main).toEqual([]);
      expect(readFileSync(main, "utf8"), main).toContain("//# sourceMappingURL=main.mjs.map");
    }
    // The lazy ones are still there, behind import(): generation reaches kafkajs, PGlite, S3, sharp and the providers.
    const lazy = [...staticClosure(bundlePath("generation")).files.values()].flat();
    for (const name of ["kafkajs", "@electric-sql/pglite", "@aws-sdk/client-s3", "sharp", "@ai-sdk/openai-compatible"]) expect(lazy, name).toContain(name);
  });
});

describe("npm start's bundle (build-start.ts, bundleOneProcess)", () => {
  it("holds every service's workspace code, keeps lazy imports lazy, names no closure at run time, and gives each file its own import.meta.url", async () => {
    const main = await buildStartBundle();
    const { packages, files: reachable } = staticClosure(main);
    for (const [file, specifiers] of reachable) {
      expect(existsSync(file), file).toBe(true);
      expect(specifiers.filter((specifier) => specifier.startsWith("@orvado/") || specifier.endsWith(".ts")), file).toEqual([]);
    }
    expect(LOADED_ON_USE.filter((name) => packages.has(name))).toEqual([]);
    const code = [...reachable.keys()].map((file) => readFileSync(file, "utf8")).join("\n");
    // tsx's keepNames helper, which cost the hot path a defineProperty per closure, is not there.
    expect(code).not.toContain("__name(");
    // Each service finds its migrations beside its sources, not beside the bundle.
    expect(code).not.toContain("import.meta.url");
    for (const service of ["auth", "billing", "generation"]) {
      const index = fileURLToPath(new URL(`../../${service}/src/index.ts`, import.meta.url));
      expect(code, service).toContain(JSON.stringify(pathToFileURL(index).href));
    }
  });
});
