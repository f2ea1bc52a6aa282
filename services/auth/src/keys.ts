import { createHash, randomBytes, timingSafeEqual } from "node:crypto";

// API key secrets: "td-" + 32 random bytes in base62. Only their SHA-256 is stored.
//
// Why a fast hash and not scrypt like passwords: a key carries 256 random bits, so
// a stolen hash cannot be brute-forced whatever the hash speed; slowness only
// protects low-entropy human passwords. A fast, unsalted hash also lets VerifyKey
// find the row by an indexed equality lookup on every request.

export const KEY_PREFIX = "td-";
const SECRET_BYTES = 32;
/** 62^42 < 2^256 < 62^43: 43 digits hold any 32-byte value, so every secret has one length. */
export const SECRET_BODY_LENGTH = 43;
/** How much of a secret the console may show ("td-Ab3x"). */
export const DISPLAY_PREFIX_LENGTH = 7;

const ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const SHAPE = new RegExp(`^${KEY_PREFIX}[0-9A-Za-z]{${SECRET_BODY_LENGTH}}$`);

/** Big-endian base62 of bytes, left-padded with "0" to width. */
export function base62(bytes: Uint8Array, width: number): string {
  let value = bytes.length === 0 ? 0n : BigInt(`0x${Buffer.from(bytes).toString("hex")}`);
  let digits = "";
  while (value > 0n) {
    digits = ALPHABET.charAt(Number(value % 62n)) + digits;
    value /= 62n;
  }
  return digits.padStart(width, "0");
}

export function newKeySecret(): string {
  return KEY_PREFIX + base62(randomBytes(SECRET_BYTES), SECRET_BODY_LENGTH);
}

/** True when text could be a key we issued; anything else is refused without a lookup. */
export function hasKeyShape(text: string): boolean {
  return SHAPE.test(text);
}

export function hashKeySecret(secret: string): string {
  return createHash("sha256").update(secret, "utf8").digest("hex");
}

/** Constant-time comparison of two hex SHA-256 digests. */
export function sameKeyHash(a: string, b: string): boolean {
  const left = Buffer.from(a, "hex");
  const right = Buffer.from(b, "hex");
  return left.length === 32 && right.length === 32 && timingSafeEqual(left, right);
}

export function displayPrefix(secret: string): string {
  return secret.slice(0, DISPLAY_PREFIX_LENGTH);
}
