import type { Logger } from "@orvado/core";
import type { Db } from "@orvado/db";
import { openPostgresLog } from "./postgres-log.ts";
import type { EventStream } from "./types.ts";

export interface OpenEventStreamOptions {
  db: Db;
  logger: Logger;
  /** Non-empty: Kafka. Empty or absent: the Postgres log on `db` (the embedded default). */
  kafkaBrokers?: string[];
  clientId?: string;
  /** Postgres log only: how often consumers look for messages a notification did not announce. */
  pollMs?: number;
}

export async function openEventStream(options: OpenEventStreamOptions): Promise<EventStream> {
  const brokers = (options.kafkaBrokers ?? []).map((broker) => broker.trim()).filter(Boolean);
  if (brokers.length > 0) {
    // Loaded only when used, like PGlite in @orvado/db: kafkajs is about 8 MB per process.
    const { openKafkaStream } = await import("./kafka.ts");
    return openKafkaStream({ brokers, clientId: options.clientId ?? "orvado", logger: options.logger });
  }
  return openPostgresLog({ db: options.db, logger: options.logger, pollMs: options.pollMs });
}
