// What `npm run bench:ledger`'s production way runs on one event stream: generation's
// outbox relay publishing the `completed` events the workers write, and billing started
// for real (migrations, prices, its own outbox relay, the settlement consumer, the hold
// sweeper) capturing them. The Postgres log is opened on the benchmark's database; Kafka
// gets the run's own topic prefix (bench/kafka.ts). Ledger and outboxes are in
// PostgreSQL either way: only the stream between the relay and the consumer differs.
import type { Logger } from "@orvado/core";
import type { Db } from "@orvado/db";
import { migrateOutbox, openEventStream, startOutboxRelay, type KafkaSettings } from "@orvado/events";
import { loadBillingConfig, startBilling } from "../services/billing/src/index.ts";
import { EventPairs } from "./ledger-pairs.ts";

export interface CapturePipeline {
  stream: "postgres" | "kafka";
  eventPairs: EventPairs;
  /** Stops billing (which settles what is logged), then the relay, then the stream. */
  stop(): Promise<void>;
}

export interface PipelineOptions {
  db: Db;
  databaseUrl: string;
  logger: Logger;
  /** Pairs reserved but not yet captured, at most (EventPairs). */
  backlog: number;
  /** Absent: the Postgres log. */
  kafka?: KafkaSettings;
}

export async function startCapturePipeline(options: PipelineOptions): Promise<CapturePipeline> {
  const { db, logger } = options;
  const stream = await openEventStream({ db, logger, kafka: options.kafka, clientId: "orvado-ledger-bench" });
  await migrateOutbox(db, "generation");
  const relay = startOutboxRelay({ db, schema: "generation", stream, logger });
  const eventPairs = new EventPairs(db, relay, options.backlog);
  const env = {
    ...process.env,
    DATABASE_URL: options.databaseUrl,
    BILLING_PORT: "0",
    ORVADO_INTERNAL_SECRET: "bench-internal-secret-000",
    ORVADO_PRICES_FILE: new URL("../config/prices.json", import.meta.url).pathname,
  };
  const billing = await startBilling(loadBillingConfig(env), { db, stream, logger, onSettled: eventPairs.onSettled }).catch(async (error: unknown) => {
    await relay.stop();
    await stream.close();
    throw error;
  });
  return {
    stream: stream.name,
    eventPairs,
    async stop() {
      await billing.stop();
      await relay.stop();
      await stream.close();
    },
  };
}
