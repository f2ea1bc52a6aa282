import { afterAll, beforeAll, describe } from "vitest";
import { createLogger } from "@orvado/core";
import { openDb, type Db } from "@orvado/db";
import { freshDatabase, type FreshDatabase } from "@orvado/testkit";
import { describeEventStreamContract } from "./contract.ts";
import { kafkaSettings } from "./kafka-settings.ts";
import { openEventStream } from "./open.ts";
import type { EventStream } from "./types.ts";

const logger = createLogger("events-contract", "silent");

describe("postgres log", () => {
  let fresh: FreshDatabase;
  let pglite: Db | undefined;
  beforeAll(async () => {
    fresh = await freshDatabase();
    // PGlite is one in-process database that every stream shares; it takes seconds to start.
    if (fresh.url === "memory://") pglite = await openDb(fresh.url);
  });
  afterAll(async () => {
    await pglite?.close();
    await fresh.drop();
  });

  describeEventStreamContract("postgres log", async () => {
    if (pglite) return openEventStream({ db: pglite, logger });
    // On a server each stream gets its own Db (its own pool), as separate processes would.
    const db = await openDb(fresh.url, { maxConnections: 5 });
    return closingDbToo(await openEventStream({ db, logger }), db);
  });
});

const kafkaBrokers = (process.env.KAFKA_BROKERS ?? "").split(",").map((broker) => broker.trim()).filter(Boolean);
if (kafkaBrokers.length === 0) console.log("kafka contract suite skipped: KAFKA_BROKERS is not set");

describe.skipIf(kafkaBrokers.length === 0)("kafka", () => {
  // The Kafka adapter does not use the Db; openEventStream still takes one.
  let db: Db;
  beforeAll(async () => {
    db = await openDb("memory://");
  });
  afterAll(async () => {
    await db?.close();
  });

  describeEventStreamContract(
    "kafka",
    () => openEventStream({ db, logger, kafka: kafkaSettings(kafkaBrokers), clientId: "orvado-contract" }),
    { deliveryTimeoutMs: 60_000, settleMs: 2_000 },
  );
});

function closingDbToo(stream: EventStream, db: Db): EventStream {
  return {
    name: stream.name,
    publish: (topic, messages) => stream.publish(topic, messages),
    subscribe: (options) => stream.subscribe(options),
    waitForGroup: (topic, group, options) => stream.waitForGroup(topic, group, options),
    async close() {
      await stream.close();
      await db.close();
    },
  };
}
