import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { SERVICE_NODE_FLAGS, STACK_NODE_FLAGS } from "./node-flags.ts";
import { BUNDLED_SERVICES, buildService, nodeFlagsPath } from "./build-services.ts";

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

  it("are written beside each bundle, where deploy/Dockerfile's command reads them", async () => {
    const dockerfile = readFileSync(new URL("../../../deploy/Dockerfile", import.meta.url), "utf8");
    expect(dockerfile).toContain("exec node $(cat services/${SERVICE}/dist/node-flags) --enable-source-maps services/${SERVICE}/dist/main.mjs");
    for (const name of BUNDLED_SERVICES) {
      await buildService(name);
      expect(readFileSync(nodeFlagsPath(name), "utf8"), name).toBe(`${SERVICE_NODE_FLAGS[name].join(" ")}\n`);
    }
  });
});
