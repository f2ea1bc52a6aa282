// Test harness shared by the *.test.ts files: a fresh database (PostgreSQL with
// TEST_DATABASE_URL, else in-memory PGlite) and auth served on a real port. The
// test's client calls it in-process (through the server's interceptors, without a
// socket) unless the suite asks for transport "http2" (Connect over HTTP/2).
import { createLogger, type Logger } from "@orvado/core";
import { openDb, type Db } from "@orvado/db";
import { internalClient, type InternalTransport } from "@orvado/rpc";
import { AuthService } from "@orvado/proto";
import { freshDatabase } from "@orvado/testkit";
import type { AuthConfig } from "./config.ts";
import { startAuth, type AuthDeps } from "./index.ts";

export const TEST_SECRET = "test-internal-secret-0123456789";

export function testConfig(databaseUrl: string, extra: Partial<AuthConfig> = {}): AuthConfig {
  return { host: "127.0.0.1", port: 0, internalSecret: TEST_SECRET, databaseUrl, ...extra };
}

export async function openTestDb(): Promise<{ db: Db; url: string; close(): Promise<void> }> {
  const database = await freshDatabase();
  const db = await openDb(database.url);
  return {
    db,
    url: database.url,
    async close() {
      await db.close();
      await database.drop();
    },
  };
}

export async function startTestAuth(
  options: { verifier?: AuthDeps["verifier"]; logger?: Logger; now?: () => number; config?: Partial<AuthConfig>; transport?: InternalTransport } = {},
) {
  const database = await openTestDb();
  const logger = options.logger ?? createLogger("auth-test", "silent");
  // Configured admin credentials keep the generated-password warning out of test output.
  const config = testConfig(database.url, { adminEmail: "root@example.test", adminPassword: "root-password", ...options.config });
  const auth = await startAuth(config, {
    db: database.db,
    logger,
    ...(options.verifier && { verifier: options.verifier }),
    ...(options.now && { now: options.now }),
  });
  const client = internalClient(AuthService, auth.rpc.url, TEST_SECRET, { transport: options.transport ?? "colocated" });
  return {
    db: database.db,
    url: auth.rpc.url,
    client,
    async close() {
      await auth.stop();
      await database.close();
    },
  };
}

export type TestAuth = Awaited<ReturnType<typeof startTestAuth>>;
