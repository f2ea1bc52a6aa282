import { describe, expect, it } from "vitest";
import { hashPassword, verifyPassword } from "./passwords.ts";

describe("password hashes", () => {
  it("store scrypt parameters, a 16-byte salt and the hash", async () => {
    const stored = await hashPassword("correct horse");
    const [scheme, n, r, p, salt, hash] = stored.split("$");
    expect([scheme, n, r, p]).toEqual(["scrypt", "32768", "8", "1"]);
    expect(Buffer.from(salt ?? "", "base64")).toHaveLength(16);
    expect(Buffer.from(hash ?? "", "base64")).toHaveLength(32);
    expect(stored).not.toContain("correct horse");
  });

  it("salt each hash", async () => {
    expect(await hashPassword("same password")).not.toBe(await hashPassword("same password"));
  });

  it("verify the right password only", async () => {
    const stored = await hashPassword("correct horse");
    expect(await verifyPassword("correct horse", stored)).toBe(true);
    expect(await verifyPassword("correct horsf", stored)).toBe(false);
    expect(await verifyPassword("", stored)).toBe(false);
  });

  it("refuse stored values it does not understand", async () => {
    for (const stored of ["", "plain", "bcrypt$1$2$3$4$5", "scrypt$x$8$1$AAAA$AAAA", "scrypt$1073741824$8$1$AAAA$AAAA"]) {
      expect(await verifyPassword("whatever", stored)).toBe(false);
    }
  });
});
