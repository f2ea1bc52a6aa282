import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { base62, displayPrefix, hasKeyShape, hashKeySecret, newKeySecret, sameKeyHash, SECRET_BODY_LENGTH } from "./keys.ts";

describe("key secrets", () => {
  it("are td- and 43 base62 digits, different every time", () => {
    const secrets = new Set(Array.from({ length: 200 }, newKeySecret));
    expect(secrets.size).toBe(200);
    for (const secret of secrets) {
      expect(secret).toMatch(/^td-[0-9A-Za-z]{43}$/);
      expect(hasKeyShape(secret)).toBe(true);
    }
  });

  it("encode base62 big-endian with fixed width", () => {
    expect(base62(new Uint8Array([0]), 3)).toBe("000");
    expect(base62(new Uint8Array([61]), 1)).toBe("z");
    expect(base62(new Uint8Array([62]), 2)).toBe("10");
    // The largest 32-byte value still fits the fixed width, so no secret is longer.
    expect(base62(new Uint8Array(32).fill(255), SECRET_BODY_LENGTH)).toHaveLength(SECRET_BODY_LENGTH);
    expect(base62(new Uint8Array(32), SECRET_BODY_LENGTH)).toBe("0".repeat(SECRET_BODY_LENGTH));
  });

  it("reject anything not shaped like an issued key", () => {
    const good = newKeySecret();
    for (const bad of ["td-", "td-abc", good.slice(0, -1), `${good}x`, `sk-${good.slice(3)}`, `${good.slice(0, -1)}-`, ` ${good}`]) {
      expect(hasKeyShape(bad)).toBe(false);
    }
  });

  it("hash with SHA-256 hex and compare hashes", () => {
    const secret = newKeySecret();
    const hash = hashKeySecret(secret);
    expect(hash).toBe(createHash("sha256").update(secret).digest("hex"));
    expect(sameKeyHash(hash, hashKeySecret(secret))).toBe(true);
    expect(sameKeyHash(hash, hashKeySecret(newKeySecret()))).toBe(false);
    expect(sameKeyHash(hash, "abc")).toBe(false);
    expect(displayPrefix(secret)).toBe(secret.slice(0, 7));
  });
});
