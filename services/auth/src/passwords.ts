import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from "node:crypto";

// Passwords are low-entropy, so they get a slow, memory-hard hash with a per-account
// salt. The parameters are stored with the hash ("scrypt$N$r$p$salt$hash") so they
// can be raised later without breaking accounts hashed under the old ones.

const N = 1 << 15;
const R = 8;
const P = 1;
const SALT_BYTES = 16;
const HASH_BYTES = 32;
/** Upper bounds on what a stored hash may ask for, so a bad row cannot exhaust memory. */
const MAX_N = 1 << 20;
const MAX_MEMORY = 256 * 1024 * 1024;

export const MIN_PASSWORD_LENGTH = 8;
/** scrypt reads the whole password; a bound keeps a huge one from costing more. */
export const MAX_PASSWORD_LENGTH = 1024;

function derive(password: string, salt: Buffer, length: number, options: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(password.normalize("NFKC"), salt, length, { ...options, maxmem: MAX_MEMORY }, (error, key) =>
      error ? reject(error) : resolve(key),
    );
  });
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(SALT_BYTES);
  const hash = await derive(password, salt, HASH_BYTES, { N, r: R, p: P });
  return ["scrypt", N, R, P, salt.toString("base64"), hash.toString("base64")].join("$");
}

/** False for a wrong password and for a stored value that is not a hash we understand. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parts = stored.split("$");
  if (parts.length !== 6 || parts[0] !== "scrypt") return false;
  const [n, r, p] = parts.slice(1, 4).map(Number) as [number, number, number];
  if (![n, r, p].every(Number.isSafeInteger) || n < 2 || n > MAX_N || r < 1 || r > 64 || p < 1 || p > 16) return false;
  const salt = Buffer.from(parts[4] ?? "", "base64");
  const expected = Buffer.from(parts[5] ?? "", "base64");
  if (salt.length === 0 || expected.length === 0) return false;
  const actual = await derive(password, salt, expected.length, { N: n, r, p });
  return timingSafeEqual(actual, expected);
}
