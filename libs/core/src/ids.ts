import { randomBytes, randomFillSync } from "node:crypto";

// Ids are drawn from a pool of random bytes filled 4 kB at a time: a request takes
// several ids, and one randomBytes call per id showed in the event loop's profile at
// 100 connections. The bytes are the same CSPRNG's; each is handed out once.
const POOL_BYTES = 4096;
const pool = Buffer.alloc(POOL_BYTES);
let used = POOL_BYTES;

/** `count` fresh random bytes as base64url. */
export function randomBase64url(count: number): string {
  if (count > POOL_BYTES) return randomBytes(count).toString("base64url");
  if (used + count > POOL_BYTES) {
    randomFillSync(pool);
    used = 0;
  }
  const text = pool.toString("base64url", used, used + count);
  used += count;
  return text;
}

// Request ids are the only thing that guards the unauthenticated cost lookup,
// so they carry 128 random bits (docs/api.md#the-cost-record; 96 would already be beyond guessing).
export function newRequestId(): string {
  return `req_${randomBase64url(16)}`;
}

export function newId(prefix: string, bytes = 12): string {
  return `${prefix}_${randomBase64url(bytes)}`;
}

const REQUEST_ID_PATTERN = /^req_[A-Za-z0-9_-]{22}$/;

export function isRequestId(text: string): boolean {
  return REQUEST_ID_PATTERN.test(text);
}
