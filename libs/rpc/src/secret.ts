import { createHash, timingSafeEqual } from "node:crypto";
import { Code, ConnectError, createContextKey, type Interceptor } from "@connectrpc/connect";

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

/**
 * The caller's secret, hashed once by sendSecret. An in-process call
 * (direct-transport.ts) hands the caller's context values to the server, so the
 * server compares this digest with its own instead of hashing the header on every
 * call: hashing was about 1% of the one-process stack's CPU at 100 connections
 * (docs/performance.md#measured-design-choices). A call off the network cannot set
 * a context value (its server makes them afresh), so there the header is hashed.
 */
const CALLER_SECRET_DIGEST = createContextKey<Buffer | undefined>(undefined, { description: "the caller's internal secret, hashed" });

export function requireSecret(secret: string): Interceptor {
  // Hashed once: every internal call is checked against it.
  const expectedDigest = digest(secret);
  return (next) => async (req) => {
    if (req.service.typeName === HEALTH_SERVICE) return next(req);
    const callerDigest = req.contextValues.get(CALLER_SECRET_DIGEST);
    const matches = callerDigest ? timingSafeEqual(callerDigest, expectedDigest) : matchesDigest(req.header.get(SECRET_HEADER), expectedDigest);
    if (!matches) throw new ConnectError("internal calls need the shared secret", Code.Unauthenticated);
    return next(req);
  };
}

/** Not an async function: it would add a promise, and its reactions, to every call for as long as the call is open. */
export function sendSecret(secret: string): Interceptor {
  const secretDigest = digest(secret);
  return (next) => (req) => {
    req.header.set(SECRET_HEADER, secret);
    req.contextValues.set(CALLER_SECRET_DIGEST, secretDigest);
    return next(req);
  };
}
