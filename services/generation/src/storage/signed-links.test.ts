import { describe, expect, it } from "vitest";
import { checkImageLink, signImagePath, storedImageLink } from "./signed-links.ts";

const SECRET = "test-link-secret";
const IMAGE_ID = "img_AbCdEf0123456789";
const NOW = 1_750_000_000;
const EXPIRES = NOW + 3600;

function parse(path: string): { imageId: string; expires: number; sig: string } {
  const url = new URL(path, "http://edge.invalid");
  const match = /^\/v1\/files\/(.+)\.png$/.exec(url.pathname);
  if (match?.[1] === undefined) throw new Error(`unexpected path ${path}`);
  return { imageId: match[1], expires: Number(url.searchParams.get("expires")), sig: url.searchParams.get("sig") ?? "" };
}

describe("signImagePath", () => {
  it("builds the file path with expiry and a base64url signature", () => {
    const path = signImagePath(IMAGE_ID, EXPIRES, SECRET);
    expect(path).toMatch(/^\/v1\/files\/img_AbCdEf0123456789\.png\?expires=1750003600&sig=[A-Za-z0-9_-]{43}$/);
    expect(signImagePath(IMAGE_ID, EXPIRES, SECRET)).toBe(path);
  });

  it("refuses to sign a malformed id or expiry", () => {
    expect(() => signImagePath("img_../../x", EXPIRES, SECRET)).toThrow();
    expect(() => signImagePath(IMAGE_ID, 1.5, SECRET)).toThrow(RangeError);
    expect(() => signImagePath(IMAGE_ID, EXPIRES, "")).toThrow();
  });
});

describe("storedImageLink", () => {
  it("signs with the image's own expiry in whole seconds and names the link by its stored format", () => {
    const expiresAt = new Date(EXPIRES * 1000 + 999);
    expect(storedImageLink(IMAGE_ID, expiresAt, "image/webp", SECRET)).toBe(signImagePath(IMAGE_ID, EXPIRES, SECRET, "webp"));
    expect(storedImageLink(IMAGE_ID, expiresAt, "image/png", SECRET)).toBe(signImagePath(IMAGE_ID, EXPIRES, SECRET));
  });
});

describe("checkImageLink", () => {
  const { imageId, expires, sig } = parse(signImagePath(IMAGE_ID, EXPIRES, SECRET));

  it("accepts the link it signed", () => {
    expect(checkImageLink(imageId, expires, sig, SECRET, NOW)).toEqual({ ok: true });
  });

  it("rejects a changed id, expiry, signature or secret as a bad signature", () => {
    const tamperedSig = (sig.startsWith("A") ? "B" : "A") + sig.slice(1);
    expect(checkImageLink("img_AbCdEf0123456780", expires, sig, SECRET, NOW)).toEqual({ ok: false, reason: "bad_signature" });
    expect(checkImageLink(imageId, expires + 1, sig, SECRET, NOW)).toEqual({ ok: false, reason: "bad_signature" });
    expect(checkImageLink(imageId, expires, tamperedSig, SECRET, NOW)).toEqual({ ok: false, reason: "bad_signature" });
    expect(checkImageLink(imageId, expires, sig, "another-secret", NOW)).toEqual({ ok: false, reason: "bad_signature" });
  });

  it("rejects signatures of the wrong length or shape without throwing", () => {
    for (const bad of ["", sig.slice(0, -1), `${sig}A`, `${sig}=`, "é".repeat(43), "../../etc/passwd"]) {
      expect(checkImageLink(imageId, expires, bad, SECRET, NOW)).toEqual({ ok: false, reason: "bad_signature" });
    }
  });

  it("rejects ids and expiries that could never have been signed", () => {
    expect(checkImageLink("../img_AbCdEf0123456789", expires, sig, SECRET, NOW)).toEqual({ ok: false, reason: "bad_signature" });
    expect(checkImageLink(imageId, Number.NaN, sig, SECRET, NOW)).toEqual({ ok: false, reason: "bad_signature" });
  });

  it("reports an expired link once its expiry is reached", () => {
    expect(checkImageLink(imageId, expires, sig, SECRET, EXPIRES - 1)).toEqual({ ok: true });
    expect(checkImageLink(imageId, expires, sig, SECRET, EXPIRES)).toEqual({ ok: false, reason: "expired" });
    expect(checkImageLink(imageId, expires, sig, SECRET, EXPIRES + 86_400)).toEqual({ ok: false, reason: "expired" });
  });

  it("checks the signature before the expiry, so a forged expired link learns nothing", () => {
    const forged = "A".repeat(43);
    expect(checkImageLink(imageId, NOW - 10, forged, SECRET, NOW)).toEqual({ ok: false, reason: "bad_signature" });
  });

  it("uses the current time by default", () => {
    const farFuture = parse(signImagePath(IMAGE_ID, 4_000_000_000, SECRET));
    expect(checkImageLink(farFuture.imageId, farFuture.expires, farFuture.sig, SECRET)).toEqual({ ok: true });
    const past = parse(signImagePath(IMAGE_ID, 1_000_000_000, SECRET));
    expect(checkImageLink(past.imageId, past.expires, past.sig, SECRET)).toEqual({ ok: false, reason: "expired" });
  });
});
