import { describe, expect, it } from "vitest";
import { MAX_SANDBOX_DELAY_MS, parseSandboxDirectives } from "./directives.ts";

describe("parseSandboxDirectives", () => {
  it("finds nothing in an ordinary prompt", () => {
    expect(parseSandboxDirectives("a cat wearing a hat")).toEqual([]);
  });

  it("finds every directive, anywhere and in any case, in prompt order", () => {
    expect(parseSandboxDirectives("[SANDBOX:Delay=250] a cat [sandbox:refuse] and [Sandbox:FAIL]")).toEqual([
      { kind: "delay", ms: 250 },
      { kind: "refuse" },
      { kind: "fail" },
    ]);
  });

  it("accepts a zero delay", () => {
    expect(parseSandboxDirectives("[sandbox:delay=0]")).toEqual([{ kind: "delay", ms: 0 }]);
  });

  it("clamps delays above ten minutes", () => {
    expect(parseSandboxDirectives("[sandbox:delay=600001]")).toEqual([{ kind: "delay", ms: MAX_SANDBOX_DELAY_MS }]);
    expect(parseSandboxDirectives(`[sandbox:delay=${"9".repeat(400)}]`)).toEqual([
      { kind: "delay", ms: MAX_SANDBOX_DELAY_MS },
    ]);
    expect(parseSandboxDirectives("[sandbox:delay=600000]")).toEqual([{ kind: "delay", ms: 600_000 }]);
  });

  it("treats malformed directives as plain text", () => {
    for (const text of [
      "[sandbox:delay=abc]",
      "[sandbox:delay=-5]",
      "[sandbox:delay=1.5]",
      "[sandbox:delay=]",
      "[sandbox: refuse]",
      "[sandbox:refused]",
      "sandbox:fail",
      "[sandbox:fail",
      "[sandbox:explode]",
    ]) {
      expect(parseSandboxDirectives(text), text).toEqual([]);
    }
  });

  it("keeps well-formed directives next to malformed ones", () => {
    expect(parseSandboxDirectives("[sandbox:delay=abc] [sandbox:delay=10]")).toEqual([{ kind: "delay", ms: 10 }]);
  });
});
