import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { STACK_NODE_FLAGS } from "./node-flags.ts";

const packageJson = JSON.parse(readFileSync(new URL("../../../package.json", import.meta.url), "utf8")) as { scripts: Record<string, string> };

describe("the one-process stack's Node flags", () => {
  it("are the ones npm start passes, so the benchmark measures what npm start runs", () => {
    expect(packageJson.scripts.start).toBe(`exec node ${STACK_NODE_FLAGS.join(" ")} --import tsx services/stack/src/start.ts`);
  });

  it("are accepted by this Node (a V8 upgrade that renames one fails here, not at start)", () => {
    expect(execFileSync(process.execPath, [...STACK_NODE_FLAGS, "-e", "process.stdout.write('ok')"], { encoding: "utf8" })).toBe("ok");
  });
});
