import type { Logger } from "@orvado/core";
import type { Db } from "@orvado/db";
import type { KafkaSettings } from "./kafka-settings.ts";
import { openPostgresLog } from "./postgres-log.ts";
import type { EventStream } from "./types.ts";

export interface OpenEventStreamOptions {
  db: Db;
  logger: Logger;
  /** With brokers: Kafka. Absent, or no brokers: the Postgres log on `db` (the embedded default). */
  kafka?: KafkaSettings;
  clientId?: string;
  /** Postgres log only: how often consumers look for messages a notification did not announce. */
  pollMs?: number;
}

export async function openEventStream(options: OpenEventStreamOptions): Promise<EventStream> {
  const brokers = (options.kafka?.brokers ?? []).map((broker) => broker.trim()).filter(Boolean);
  if (options.kafka && brokers.length > 0) {
    // Loaded only when used, like PGlite in @orvado/db: kafkajs costs memory in every process that loads it.
    const { openKafkaStream } = await import("./kafka.ts");
    return openKafkaStream({ settings: { ...options.kafka, brokers }, clientId: options.clientId ?? "orvado", logger: options.logger });
  }
  return openPostgresLog({ db: options.db, logger: options.logger, pollMs: options.pollMs });
}
