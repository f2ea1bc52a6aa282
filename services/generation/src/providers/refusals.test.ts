import { describe, expect, it } from "vitest";
import { detectRefusal, mayRefuse } from "./refusals.ts";

// Which upstream answers are content-policy refusals (final, 502, never retried), through
// the registry; each provider's own rule is tested beside it (providers/<name>/refusal.test.ts).

const policyError = { error: { code: "content_policy_violation", message: "Your request was rejected by the safety system" } };

describe("refusals", () => {
  it("reads an OpenAI-style refusal from a 4xx answer only", () => {
    for (const provider of ["openai", "openai-compatible", "bytedance"] as const) {
      expect(detectRefusal(provider, 400, policyError)).toBe("Your request was rejected by the safety system");
      expect(detectRefusal(provider, 200, policyError)).toBeUndefined();
      expect(detectRefusal(provider, 500, policyError)).toBeUndefined();
      expect(detectRefusal(provider, 400, { error: { code: "invalid_size", message: "bad size" } })).toBeUndefined();
    }
  });

  it("says an OpenAI-style success or server error cannot be a refusal, so it is not parsed twice", () => {
    expect([200, 201, 399, 500, 503].map((status) => mayRefuse("openai", status))).toEqual([false, false, false, false, false]);
    expect([400, 403, 499].map((status) => mayRefuse("openai-compatible", status))).toEqual([true, true, true]);
    expect(mayRefuse("bytedance", 200)).toBe(false);
  });

  it("looks at every answer of the APIs that refuse in a successful one", () => {
    for (const provider of ["google", "fal", "black-forest-labs", "replicate"] as const) expect(mayRefuse(provider, 200)).toBe(true);
    expect(detectRefusal("google", 200, { promptFeedback: { blockReason: "SAFETY" } })).toBe("prompt blocked (SAFETY)");
    expect(detectRefusal("fal", 200, { images: [{ url: "https://x" }], has_nsfw_concepts: [true] })).toBe("the result was flagged as NSFW");
  });
});
