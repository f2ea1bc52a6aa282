import { describe, expect, it } from "vitest";
import { findIllFormedText } from "./well-formed-text.ts";

describe("findIllFormedText", () => {
  it("accepts well-formed text, paired surrogates (emoji) included", () => {
    expect(findIllFormedText({ prompt: "a 🎨 and 漢字", models: ["beta"], n: 1 })).toBeNull();
  });
  it("names the field that holds an unpaired surrogate, however deep", () => {
    expect(findIllFormedText({ prompt: "a\ud800b" })).toBe("prompt");
    expect(findIllFormedText({ models: ["beta", "x\udfff"] })).toBe("models[1]");
    expect(findIllFormedText({ a: { b: "\ud83d" } })).toBe("a.b");
    expect(findIllFormedText("\ud800")).toBe("");
    expect(findIllFormedText({ "k\ud800": 1 })).toBe("A field name");
  });
  it("walks a deeply nested value without exhausting the stack", () => {
    let deep: unknown = "\ud800";
    for (let depth = 0; depth < 200_000; depth += 1) deep = [deep];
    expect(findIllFormedText(deep)).toMatch(/^(\[0\]){200000}$/);
  });
});
