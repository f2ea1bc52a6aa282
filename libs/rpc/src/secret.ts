import { createHash, timingSafeEqual } from "node:crypto";
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";

// Every internal call carries a shared secret; health checks stay open so probes need none.
export const SECRET_HEADER = "x-orvado-internal-secret";
export const HEALTH_SERVICE = "grpc.health.v1.Health";

const digest = (text: string) => createHash("sha256").update(text).digest();

export function secretsMatch(given: string | null, expected: string): boolean {
  return matchesDigest(given, digest(expected));
}

/** Compares digests of equal length, so the time taken says nothing about the secret. */
function matchesDigest(given: string | null, expectedDigest: Buffer): boolean {
  return given !== null && timingSafeEqual(digest(given), expectedDigest);
}

export function requireSecret(secret: string): Interceptor {
  // Hashed once: every internal call is checked against it.
  const expectedDigest = digest(secret);
  return (next) => async (req) => {
    if (req.service.typeName === HEALTH_SERVICE) return next(req);
    // In-process calls too carry the secret as a header (in-process.ts), so one check serves both paths.
    if (!matchesDigest(req.header.get(SECRET_HEADER), expectedDigest)) throw new ConnectError("internal calls need the shared secret", Code.Unauthenticated);
    return next(req);
  };
}

/** Not an async function: it would add a promise, and its reactions, to every call for as long as the call is open. */
export function sendSecret(secret: string): Interceptor {
  return (next) => (req) => {
    req.header.set(SECRET_HEADER, secret);
    return next(req);
  };
}
