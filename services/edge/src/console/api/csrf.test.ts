import { describe, expect, it, vi } from "vitest";

// The CSRF header is compared with crypto.timingSafeEqual over two SHA-256 digests
// (always 32 bytes each, whatever was sent), asserted on the code path rather than
// by measuring time.
const spy = vi.hoisted(() => ({ calls: [] as Array<[number, number]> }));
vi.mock("node:crypto", async (importOriginal) => {
  const real = await importOriginal<typeof import("node:crypto")>();
  return {
    ...real,
    timingSafeEqual: (a: NodeJS.ArrayBufferView, b: NodeJS.ArrayBufferView) => {
      spy.calls.push([a.byteLength, b.byteLength]);
      return real.timingSafeEqual(a, b);
    },
  };
});
const { sameCsrfToken } = await import("./session.ts");

describe("sameCsrfToken", () => {
  it("accepts only the same token, comparing equal-length digests in constant time", () => {
    spy.calls.length = 0;
    expect(sameCsrfToken("token-abc", "token-abc")).toBe(true);
    expect(sameCsrfToken("token-abd", "token-abc")).toBe(false);
    expect(sameCsrfToken("a much longer token than the other one", "token-abc")).toBe(false);
    expect(spy.calls).toEqual([
      [32, 32],
      [32, 32],
      [32, 32],
    ]);
    expect(sameCsrfToken("", "")).toBe(false);
  });
});
