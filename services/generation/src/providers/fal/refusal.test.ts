import { describe, expect, it } from "vitest";
import { falRefusal } from "./refusal.ts";

describe("fal refusals", () => {
  it("reads a content_policy_violation detail", () => {
    expect(falRefusal({ detail: [{ type: "content_policy_violation", msg: "not allowed" }] })).toBe("not allowed");
    expect(falRefusal({ detail: [{ type: "value_error", msg: "bad size" }] })).toBeUndefined();
  });

  it("refuses only when every image was flagged NSFW", () => {
    expect(falRefusal({ images: [{}, {}], has_nsfw_concepts: [true, true] })).toBe("the result was flagged as NSFW");
    expect(falRefusal({ images: [{}, {}], has_nsfw_concepts: [true, false] })).toBeUndefined();
    expect(falRefusal({ images: [{}], nsfw_content_detected: [true] })).toBe("the result was flagged as NSFW");
  });
});
