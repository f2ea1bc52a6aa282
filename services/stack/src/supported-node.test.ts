import { existsSync, realpathSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { OLDEST_SUPPORTED_NODE_MAJOR, unsupportedNodeReason } from "./supported-node.ts";

// No transport: the version rule, and the Node this test worker itself runs on.

const PROJECT_NODE = new URL("../../../node_modules/.bin/node", import.meta.url).pathname;

describe("the supported Node.js", () => {
  it("refuses an older major in one line that says how to start on a supported one", () => {
    const reason = unsupportedNodeReason("20.20.2", "/usr/bin/node");
    expect(reason).toContain("needs Node.js 24 or later");
    expect(reason).toContain("/usr/bin/node is Node.js 20.20.2");
    expect(reason).toContain("npm start");
    expect(reason).not.toContain("\n");
  });

  it("accepts the LTS and later majors", () => {
    for (const version of ["24.0.0", "24.22.3", "26.12.1"]) expect(unsupportedNodeReason(version, "node")).toBeUndefined();
  });

  it("runs the tests on a supported Node: the one npm ci brought, where this platform has one", () => {
    expect(Number(process.versions.node.split(".")[0])).toBeGreaterThanOrEqual(OLDEST_SUPPORTED_NODE_MAJOR);
    if (existsSync(PROJECT_NODE)) expect(realpathSync(process.execPath)).toBe(realpathSync(PROJECT_NODE));
  });
});
