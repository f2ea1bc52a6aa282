// The auth service as its own process: config from env, its database, AuthService on AUTH_PORT.
import { createLogger, requireSharedDatabase, stopOnSignal } from "@orvado/core";
import { openDb } from "@orvado/db";
import { loadAuthConfig } from "./config.ts";
import { startAuth } from "./index.ts";

const logger = createLogger("auth");
const config = loadAuthConfig();
requireSharedDatabase("auth", config.databaseUrl);
const db = await openDb(config.databaseUrl);
try {
  const auth = await startAuth(config, { db, logger });
  logger.info({ url: auth.rpc.url }, "auth listening");
  stopOnSignal(
    {
      async stop() {
        await auth.stop();
        await db.close();
      },
    },
    logger,
  );
} catch (error) {
  logger.error({ err: error }, "auth failed to start");
  await db.close();
  process.exit(1);
}
