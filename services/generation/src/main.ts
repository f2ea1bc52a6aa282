import { createLogger, requireSharedDatabase, stopOnSignal } from "@orvado/core";
import { openDb } from "@orvado/db";
import { openEventStream } from "@orvado/events";
import { loadGenerationConfig, startGeneration } from "./index.ts";

const config = loadGenerationConfig();
const logger = createLogger("generation");
requireSharedDatabase("generation", config.databaseUrl);
const db = await openDb(config.databaseUrl);
const stream = await openEventStream({ db, logger, kafka: config.kafka, clientId: "orvado-generation" });
const generation = await startGeneration(config, { db, stream, logger });
logger.info({ url: generation.rpc.url }, "generation listening");
stopOnSignal({ stop: async () => { await generation.stop(); await stream.close(); await db.close(); } }, logger);
