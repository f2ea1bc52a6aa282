// Auth owns accounts, passwords, console sessions and API keys (td-…, stored hashed) behind orvado.v1.AuthService.
// It never touches money: balances, limits' spending and prices belong to billing.
import { fileURLToPath } from "node:url";
import { migrate, type Db } from "@orvado/db";
import type { Logger } from "@orvado/core";
import { startRpcServer, type RpcServer } from "@orvado/rpc";
import { AuthService } from "@orvado/proto";
import type { AuthConfig } from "./config.ts";
import { ensureAdmin } from "./bootstrap.ts";
import { authRoutes, type AuthServiceDeps } from "./service.ts";

export { loadAuthConfig, type AuthConfig } from "./config.ts";
export { DEFAULT_ADMIN_EMAIL } from "./bootstrap.ts";
export { REFUSALS } from "./verify.ts";
export { hasKeyShape, hashKeySecret, KEY_PREFIX } from "./keys.ts";
export { verifyPassword } from "./passwords.ts";
export { SESSION_REFUSALS } from "./sessions.ts";

const MIGRATIONS = fileURLToPath(new URL("../migrations", import.meta.url));

export interface AuthDeps {
  db: Db;
  logger: Logger;
  /** Tests shorten the last_used_at interval or move the clock. */
  verifier?: AuthServiceDeps["verifier"];
  /** Tests move the clock to reach session expiry and the sign-in window. */
  now?: () => number;
}

/** Migrates the auth schema, makes sure an admin exists, and serves AuthService. The caller owns db. */
export async function startAuth(config: AuthConfig, deps: AuthDeps): Promise<{ rpc: RpcServer; stop(): Promise<void> }> {
  const { db, logger } = deps;
  const applied = await migrate(db, "auth", MIGRATIONS);
  if (applied.length > 0) logger.info({ applied }, "auth migrations applied");
  await ensureAdmin(db, logger, config);
  const rpc = await startRpcServer({
    host: config.host,
    port: config.port,
    secret: config.internalSecret,
    serviceNames: [AuthService.typeName],
    routes: authRoutes({
      db,
      logger,
      ...(deps.verifier && { verifier: deps.verifier }),
      ...(deps.now && { now: deps.now }),
      ...(config.sessions && { sessions: config.sessions }),
      ...(config.signInLimits && { signInLimits: config.signInLimits }),
    }),
    logger,
  });
  return { rpc, stop: () => rpc.close() };
}
