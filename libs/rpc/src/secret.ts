import { createHash, timingSafeEqual } from "node:crypto";
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";

// Every internal call carries a shared secret; health checks stay open so probes need none.
export const SECRET_HEADER = "x-orvado-internal-secret";
export const HEALTH_SERVICE = "grpc.health.v1.Health";

const digest = (text: string) => createHash("sha256").update(text).digest();

export function secretsMatch(given: string | null, expected: string): boolean {
  return given !== null && timingSafeEqual(digest(given), digest(expected));
}

export function requireSecret(secret: string): Interceptor {
  return (next) => async (req) => {
    if (req.service.typeName !== HEALTH_SERVICE && !secretsMatch(req.header.get(SECRET_HEADER), secret)) {
      throw new ConnectError("internal calls need the shared secret", Code.Unauthenticated);
    }
    return next(req);
  };
}

export function sendSecret(secret: string): Interceptor {
  return (next) => async (req) => {
    req.header.set(SECRET_HEADER, secret);
    return next(req);
  };
}
