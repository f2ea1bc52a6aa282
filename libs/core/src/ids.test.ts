import { describe, expect, it } from "vitest";
import { isRequestId, newId, newRequestId, randomBase64url } from "./ids.ts";

describe("ids", () => {
  it("gives request ids of 128 random bits in the pattern the cost lookup checks", () => {
    const id = newRequestId();
    expect(isRequestId(id)).toBe(true);
    expect(Buffer.from(id.slice(4), "base64url")).toHaveLength(16);
  });

  it("never hands out the same random bytes twice, across many refills of the pool", () => {
    // 20,000 × 16 bytes is about 78 refills of the 4-kB pool.
    const ids = Array.from({ length: 20_000 }, () => newRequestId());
    expect(new Set(ids).size).toBe(ids.length);
    const mixed = Array.from({ length: 5_000 }, (_, index) => newId("img", 12 + (index % 29)));
    expect(new Set(mixed).size).toBe(mixed.length);
  });

  it("draws each size asked for, larger than the pool too", () => {
    for (const count of [1, 12, 16, 4095, 4096, 10_000]) expect(Buffer.from(randomBase64url(count), "base64url")).toHaveLength(count);
    expect(newId("key", 24)).toMatch(/^key_[A-Za-z0-9_-]{32}$/);
  });
});
