import { describe, expect, it } from "vitest";
import { replicateRefusal } from "./refusal.ts";

describe("Replicate refusals", () => {
  it("reads a failed prediction whose error names the policy or E005", () => {
    expect(replicateRefusal({ status: "failed", error: "E005: the input was flagged as sensitive" })).toBe("E005: the input was flagged as sensitive");
    expect(replicateRefusal({ status: "failed", error: "NSFW content detected" })).toBe("NSFW content detected");
    expect(replicateRefusal({ status: "failed", error: "CUDA out of memory" })).toBeUndefined();
    expect(replicateRefusal({ status: "succeeded", error: "flagged" })).toBeUndefined();
  });
});
