import { createLogger, requireSharedDatabase, stopOnSignal } from "@orvado/core";
import { openDb } from "@orvado/db";
import { openEventStream } from "@orvado/events";
import { loadBillingConfig, startBilling } from "./index.ts";

const config = loadBillingConfig();
const logger = createLogger("billing");
requireSharedDatabase("billing", config.databaseUrl);
const db = await openDb(config.databaseUrl);
const stream = await openEventStream({ db, logger, kafka: config.kafka, clientId: "orvado-billing" });
const billing = await startBilling(config, { db, stream, logger });
logger.info({ url: billing.rpc.url }, "billing listening");
stopOnSignal({ stop: async () => { await billing.stop(); await stream.close(); await db.close(); } }, logger);
