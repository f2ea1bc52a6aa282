import { describe, expect, it } from "vitest";
import { googleRefusal } from "./refusal.ts";

describe("Google refusals", () => {
  it("reads a blocked prompt and a safety finish from Gemini", () => {
    expect(googleRefusal({ promptFeedback: { blockReason: "SAFETY" } })).toBe("prompt blocked (SAFETY)");
    expect(googleRefusal({ promptFeedback: { blockReason: "BLOCK_REASON_UNSPECIFIED" } })).toBeUndefined();
    expect(googleRefusal({ candidates: [{ finishReason: "IMAGE_SAFETY" }] })).toBe("generation stopped (IMAGE_SAFETY)");
    expect(googleRefusal({ candidates: [{ finishReason: "STOP" }] })).toBeUndefined();
  });
});
