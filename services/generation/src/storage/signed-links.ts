import { createHmac, timingSafeEqual } from "node:crypto";
import { assertImageId, isImageId } from "./store.ts";
import { extensionFor } from "../output-format.ts";

// Image links are bearer capabilities: whoever holds one may fetch the image
// until it expires, with no API key. The HMAC binds the id to the expiry.

const LINK_EXTENSIONS = new Set(["png", "jpeg", "webp"]);

export type LinkCheck = { ok: true } | { ok: false; reason: "bad_signature" | "expired" };

/**
 * `/v1/files/<imageId>.<extension>?expires=<unix>&sig=<signature>`; the link is valid while now < expires.
 * The extension names the stored format (png, jpeg, webp) for clients that save by it; the signature
 * binds only the id and expiry, and the file is served with its stored content type whatever the name.
 */
export function signImagePath(imageId: string, expiresUnix: number, secret: string, extension = "png"): string {
  assertImageId(imageId);
  if (!isUnixSeconds(expiresUnix)) throw new RangeError(`expires must be whole Unix seconds, got ${expiresUnix}`);
  if (secret.length === 0) throw new Error("The link signing secret is empty");
  if (!LINK_EXTENSIONS.has(extension)) throw new RangeError(`no image link ends in .${extension}`);
  return `/v1/files/${imageId}.${extension}?expires=${expiresUnix}&sig=${signatureFor(imageId, expiresUnix, secret)}`;
}

/** A stored image's link: signed with the image's own expiry (a link never outlives its file), named by its format. */
export function storedImageLink(imageId: string, expiresAt: Date, contentType: string, secret: string): string {
  return signImagePath(imageId, Math.floor(expiresAt.getTime() / 1000), secret, extensionFor(contentType));
}

export function checkImageLink(
  imageId: string,
  expiresUnix: number,
  signature: string,
  secret: string,
  nowUnix: number = Math.floor(Date.now() / 1000),
): LinkCheck {
  // The signature is judged first: a forged link must not learn whether its expiry would have passed.
  // Neither a malformed id nor a malformed expiry can have been signed.
  if (!isImageId(imageId) || !isUnixSeconds(expiresUnix) || secret.length === 0) {
    return { ok: false, reason: "bad_signature" };
  }
  const expected = Buffer.from(signatureFor(imageId, expiresUnix, secret), "utf8");
  const given = Buffer.from(signature, "utf8");
  // timingSafeEqual throws on unequal lengths; the expected length is public anyway (43 characters).
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    return { ok: false, reason: "bad_signature" };
  }
  if (nowUnix >= expiresUnix) return { ok: false, reason: "expired" };
  return { ok: true };
}

function signatureFor(imageId: string, expiresUnix: number, secret: string): string {
  return createHmac("sha256", secret).update(`${imageId}.${expiresUnix}`).digest("base64url");
}

function isUnixSeconds(value: number): boolean {
  return Number.isSafeInteger(value) && value >= 0;
}
