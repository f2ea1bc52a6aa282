import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { SERVICE_NODE_FLAGS, STACK_NODE_FLAGS } from "./node-flags.ts";
import { BUNDLED_SERVICES, buildService, nodeFlagsPath, type BundledService } from "./build-services.ts";

const packageJson = JSON.parse(readFileSync(new URL("../../../package.json", import.meta.url), "utf8")) as { scripts: Record<string, string> };

describe("the one-process stack's Node flags", () => {
  it("are the ones npm start passes, so the benchmark measures what npm start runs", () => {
    expect(packageJson.scripts.start).toBe(`node --import tsx services/stack/src/build-start.ts && exec node ${STACK_NODE_FLAGS.join(" ")} services/stack/dist/start.mjs`);
  });

  it("are accepted by this Node (a V8 upgrade that renames one fails here, not at start)", () => {
    expect(execFileSync(process.execPath, [...STACK_NODE_FLAGS, "-e", "process.stdout.write('ok')"], { encoding: "utf8" })).toBe("ok");
  });
});

describe("each service's Node flags in the four-process deployment", () => {
  it("are accepted by this Node", () => {
    for (const name of BUNDLED_SERVICES) {
      expect(execFileSync(process.execPath, [...SERVICE_NODE_FLAGS[name], "-e", "process.stdout.write('ok')"], { encoding: "utf8" }), name).toBe("ok");
    }
  });

  // --optimize-for-size held it at 2 MB whatever --max-semi-space-size said, and generation
  // collected four times as often under a burst (node-flags.ts).
  it("let the young generation grow to what --max-semi-space-size gives: 32 MB in generation, 8 MB elsewhere", () => {
    const keepHalf = "const kept = []; for (let i = 0; i < 2e6; i++) { const o = { i }; if (i % 2 === 0) kept.push(o); }";
    const newSpace = "require('v8').getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size";
    const expectedMb: Record<BundledService, number> = { auth: 8, billing: 8, generation: 32, edge: 8 };
    for (const name of BUNDLED_SERVICES) {
      const bytes = execFileSync(process.execPath, [...SERVICE_NODE_FLAGS[name], "-e", `${keepHalf} process.stdout.write(String(${newSpace}))`], { encoding: "utf8" });
      // Node 24's V8 at times reports a few pages beyond the two semi-spaces right after
      // a scavenge: the new space reached what the flag gives, and not the next size up.
      expect(Number(bytes), name).toBeGreaterThanOrEqual(expectedMb[name] * 1024 * 1024);
      expect(Number(bytes), name).toBeLessThan(2 * expectedMb[name] * 1024 * 1024);
    }
  });

  it("are written beside each bundle, where deploy/Dockerfile's command reads them", async () => {
    const dockerfile = readFileSync(new URL("../../../deploy/Dockerfile", import.meta.url), "utf8");
    // biome-ignore lint/suspicious/noTemplateCurlyInString: ${SERVICE} is the Dockerfile's shell variable, not a template
    expect(dockerfile).toContain("exec node $(cat services/${SERVICE}/dist/node-flags) --enable-source-maps services/${SERVICE}/dist/main.mjs");
    for (const name of BUNDLED_SERVICES) {
      await buildService(name);
      expect(readFileSync(nodeFlagsPath(name), "utf8"), name).toBe(`${SERVICE_NODE_FLAGS[name].join(" ")}\n`);
    }
  });
});
