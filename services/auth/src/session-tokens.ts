import { createHash, randomBytes } from "node:crypto";

// Console session tokens: 32 random bytes, base64url (43 characters), sent only in
// an HttpOnly cookie. The database keeps their SHA-256 (a 256-bit random token
// cannot be brute-forced from its hash, so a fast hash is enough, as for API keys).
// The CSRF token is derived from the session token under a different label: the
// console reads it from sign-in or /me, a page on another site cannot, and a
// database reader who sees only the stored hash cannot compute it either.

const TOKEN_BYTES = 32;
const TOKEN_SHAPE = /^[A-Za-z0-9_-]{43}$/;

export function newSessionToken(): string {
  return randomBytes(TOKEN_BYTES).toString("base64url");
}

export function hasSessionTokenShape(text: string): boolean {
  return TOKEN_SHAPE.test(text);
}

export function hashSessionToken(token: string): string {
  return createHash("sha256").update(`orvado.session\n${token}`, "utf8").digest("hex");
}

export function csrfTokenFor(token: string): string {
  return createHash("sha256").update(`orvado.csrf\n${token}`, "utf8").digest("base64url");
}
