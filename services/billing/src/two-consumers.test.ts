import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { toBinary } from "@bufbuild/protobuf";
import { BillingEventSchema } from "@orvado/proto";
import { openDb, type Db } from "@orvado/db";
import { BILLING_TOPIC, openEventStream, type EventStream } from "@orvado/events";
import { startBilling, type RunningBilling } from "./index.ts";
import { LEDGER_GROUP } from "./consumer.ts";
import type { SettleResult } from "./settle.ts";
import { replayLedger } from "./replay.ts";
import {
  BETA_1K_MICROS,
  PRICES_FILE,
  TEST_SECRET,
  USD,
  completedEvent,
  countByKind,
  failedEvent,
  fundedAccount,
  heldRequest,
  ledgerOf,
  startTestBilling,
  type RequestIds,
  type TestBilling,
} from "./test-support.ts";

// Issue B §10: two billing processes consume the same stream. On the Postgres
// log they share the consumer group; each event must be handled by exactly one
// of them, once, even while both are busy and the events are duplicated.

const REQUESTS = 120;

type Seen = Map<string, SettleResult[]>;
const recorder = (seen: Seen) => (eventId: string, result: SettleResult) => seen.set(eventId, [...(seen.get(eventId) ?? []), result]);

let first: TestBilling;
let second: { db: Db; stream: EventStream; service: RunningBilling; ownsDb: boolean };
const seenByFirst: Seen = new Map();
const seenBySecond: Seen = new Map();

beforeAll(async () => {
  first = await startTestBilling({ onSettled: recorder(seenByFirst) });
  // A second process: its own pool and stream on the same database (PGlite, in
  // memory, can only be shared, which still gives two consumers of the group).
  const ownsDb = first.url.startsWith("postgres");
  const db = ownsDb ? await openDb(first.url) : first.db;
  const stream = await openEventStream({ db, logger: first.logger, kafka: first.kafka, clientId: "billing-test-2" });
  const service = await startBilling(
    {
      host: "127.0.0.1",
      port: 0,
      internalSecret: TEST_SECRET,
      databaseUrl: first.url,
      pricesFile: PRICES_FILE,
      holdTtlMs: 3_600_000,
      sweepIntervalMs: 3_600_000,
      kafka: first.kafka,
    },
    { db, stream, logger: first.logger, onSettled: recorder(seenBySecond) },
  );
  second = { db, stream, service, ownsDb };
});

afterAll(async () => {
  await second?.service.stop().catch(() => {}); // already stopped by the second test
  await second?.stream.close();
  if (second?.ownsDb) await second.db.close();
  await first?.close();
});

describe("two billing processes on one stream", () => {
  it("handle every event once between them and settle every request once", async () => {
    const accountId = await fundedAccount(first.client, 100n * USD);
    const requests: RequestIds[] = [];
    for (let index = 0; index < REQUESTS; index++) requests.push(await heldRequest(first.client, accountId, 2));

    // Odd requests deliver 1 of 2 images, even ones fail; every event is published twice.
    const events = requests.map((ids, index) => (index % 2 ? completedEvent(ids, 1) : failedEvent(ids)));
    const messages = [...events, ...events].map((event) => ({
      id: event.eventId,
      key: event.accountId,
      value: toBinary(BillingEventSchema, event),
    }));
    // Published in small batches from both processes' streams, so both are busy at once.
    await Promise.all(
      Array.from({ length: 8 }, (_, part) =>
        (part % 2 ? second.stream : first.stream).publish(BILLING_TOPIC, messages.filter((_, index) => index % 8 === part)),
      ),
    );
    await first.stream.waitForGroup(BILLING_TOPIC, LEDGER_GROUP, { timeoutMs: 60_000 });

    // Each published message was handled by exactly one process: 2 handlings per event id in all.
    for (const event of events) {
      const handled = [...(seenByFirst.get(event.eventId) ?? []), ...(seenBySecond.get(event.eventId) ?? [])];
      expect(handled, event.eventId).toHaveLength(2);
      expect(handled.filter((result) => result === "applied"), event.eventId).toHaveLength(1);
    }

    // And the money: 60 captures of one image, 60 full releases, 60 partial releases.
    const counts = countByKind(await ledgerOf(first.db, { accountId }));
    expect(counts).toEqual({ top_up: 1, reserve: REQUESTS, capture: REQUESTS / 2, release: REQUESTS, adjustment: 0 });
    const { balance } = await first.client.getBalance({ accountId });
    expect(balance!.balanceMicros).toBe(100n * USD - BigInt(REQUESTS / 2) * BETA_1K_MICROS);
    expect(balance!.heldMicros).toBe(0n);
    expect((await replayLedger(first.db)).differences).toEqual([]);
  });

  it("carry on with the other process when one stops mid-stream", async () => {
    // The group has one active consumer at a time; the other takes over when it stops.
    await second.service.stop();
    const accountId = await fundedAccount(first.client, 10n * USD);
    const requests: RequestIds[] = [];
    for (let index = 0; index < 20; index++) requests.push(await heldRequest(first.client, accountId, 1));
    const events = requests.map((ids) => completedEvent(ids, 1));
    await second.stream.publish(
      BILLING_TOPIC,
      events.map((event) => ({ id: event.eventId, key: event.accountId, value: toBinary(BillingEventSchema, event) })),
    );
    await first.stream.waitForGroup(BILLING_TOPIC, LEDGER_GROUP, { timeoutMs: 60_000 });
    for (const event of events) {
      expect(seenByFirst.get(event.eventId), event.eventId).toEqual(["applied"]);
      expect(seenBySecond.get(event.eventId)).toBeUndefined();
    }
    expect((await first.client.getBalance({ accountId })).balance!.balanceMicros).toBe(10n * USD - 20n * BETA_1K_MICROS);
  });
});
