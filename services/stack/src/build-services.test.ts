import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { BUNDLED_SERVICES, buildServices, bundlePath } from "./build-services.ts";

// What the bundles must be for `node services/<name>/dist/main.mjs` to run without tsx.
// That they do run is the fault-injection test's business (process-stack.ts starts them).
describe("npm run build", () => {
  it("bundles every service's workspace code and leaves node_modules packages external", async () => {
    const files = await buildServices();
    expect(files).toEqual(BUNDLED_SERVICES.map(bundlePath));
    for (const file of files) {
      const code = readFileSync(file, "utf8");
      const imported = [...code.matchAll(/(?:^|\n)import\s[^;]*?from\s*"([^"]+)"|import\("([^"]+)"\)/g)].map((m) => m[1] ?? m[2]!);
      expect(imported.filter((specifier) => specifier.startsWith("@orvado/") || specifier.endsWith(".ts")), file).toEqual([]);
      expect(imported, file).toContain("pino");
      expect(code, file).toContain("//# sourceMappingURL=main.mjs.map");
    }
  });
});
