// Shared by billing's own tests (not exported from the package): a billing
// service on a fresh database, fed events the way generation would publish them.
// The test's client calls it in-process (through the server's interceptors,
// without a socket) unless the suite asks for transport "http2" (Connect over HTTP/2).
import { fileURLToPath } from "node:url";
import { expect } from "vitest";
import { create, toBinary } from "@bufbuild/protobuf";
import { BillingEventSchema, BillingService, ErrorCode, Tier, type BillingEvent } from "@orvado/proto";
import { createLogger, type Logger } from "@orvado/core";
import { openDb, type Db, type Queryable } from "@orvado/db";
import { BILLING_TOPIC, kafkaSettings, openEventStream, type EventStream, type KafkaSettings } from "@orvado/events";
import { internalClient, type Client, type InternalTransport } from "@orvado/rpc";
import { freshDatabase, testKafkaBrokers, testRunsOnKafka, uniqueKafkaPrefix, type FreshDatabase } from "@orvado/testkit";
import { startBilling, type RunningBilling } from "./index.ts";
import type { BillingConfig } from "./config.ts";
import { LEDGER_GROUP, type SettlementObserver } from "./consumer.ts";
import type { EntryKind } from "./ledger.ts";
import { recomputeFromLedger } from "./replay.ts";

export const PRICES_FILE = fileURLToPath(new URL("../../../config/prices.json", import.meta.url));
/** config/prices.json: beta 1K = $0.02. */
export const BETA_1K_MICROS = 20_000n;
export const USD = 1_000_000n;

const SECRET = "billing-test-secret-0123456789";
const HOUR_MS = 3_600_000;

export interface TestBilling {
  /** The database's address, for a second billing process on the same data. */
  url: string;
  /** The stream's settings: a second billing process on the same data uses them too. */
  kafka: KafkaSettings;
  db: Db;
  stream: EventStream;
  logger: Logger;
  service: RunningBilling;
  client: Client<typeof BillingService>;
  close(): Promise<void>;
}

export const TEST_SECRET = SECRET;

/**
 * The stream billing's tests run on: the Postgres log, or in the "kafka" test
 * project Kafka with a topic of this test's own (6-s sessions: a member that is
 * gone is replaced quickly).
 */
export function testStreamSettings(): KafkaSettings {
  if (!testRunsOnKafka()) return kafkaSettings([]);
  return kafkaSettings(testKafkaBrokers(), { topicPrefix: uniqueKafkaPrefix(), sessionTimeoutMs: 6_000 });
}

export async function startTestBilling(
  options: { holdTtlMs?: number; onSettled?: SettlementObserver; transport?: InternalTransport } = {},
): Promise<TestBilling> {
  const database: FreshDatabase = await freshDatabase();
  const db = await openDb(database.url);
  const logger = createLogger("billing-test", "silent");
  const kafka = testStreamSettings();
  const stream = await openEventStream({ db, logger, kafka, clientId: "billing-test" });
  const config: BillingConfig = {
    host: "127.0.0.1",
    port: 0,
    internalSecret: SECRET,
    databaseUrl: database.url,
    pricesFile: PRICES_FILE,
    holdTtlMs: options.holdTtlMs ?? HOUR_MS,
    // Tests sweep by calling releaseExpiredHolds themselves.
    sweepIntervalMs: HOUR_MS,
    kafka,
  };
  const service = await startBilling(config, { db, stream, logger, onSettled: options.onSettled });
  const client = internalClient(BillingService, service.rpc.url, SECRET, { transport: options.transport ?? "colocated" });
  return {
    url: database.url,
    kafka,
    db,
    stream,
    logger,
    service,
    client,
    async close() {
      await service.stop();
      await stream.close();
      await db.close();
      await database.drop();
    },
  };
}

let counter = 0;
/** A fresh id with a readable prefix, unique within the test process. */
export const uniqueId = (prefix: string) => `${prefix}_${process.pid}_${++counter}_${Math.random().toString(36).slice(2, 8)}`;

export interface RequestIds {
  requestId: string;
  accountId: string;
  keyId: string;
}

/** A beta 1K reservation of n images, as the edge sends it. */
export function betaReserve(ids: RequestIds, imagesRequested = 1, keyLimitMicros?: bigint) {
  return { ...ids, keyLimitMicros, model: "beta", tier: Tier.TIER_1K, size: "1024x1024", imagesRequested };
}

export async function fundedAccount(client: TestBilling["client"], amountMicros: bigint): Promise<string> {
  const accountId = uniqueId("acct");
  await client.topUp({ accountId, amountMicros, note: "test funds", topUpId: uniqueId("topup") });
  return accountId;
}

/** Holds one request through the RPC and returns its ids; fails the test on a refusal. */
export async function heldRequest(client: TestBilling["client"], accountId: string, imagesRequested = 1): Promise<RequestIds> {
  const ids = { requestId: uniqueId("req"), accountId, keyId: uniqueId("key") };
  const response = await client.reserve(betaReserve(ids, imagesRequested));
  expect(response.result.case).toBe("hold");
  return ids;
}

export function completedEvent(ids: RequestIds, imagesDelivered: number): BillingEvent {
  return create(BillingEventSchema, {
    eventId: `${ids.requestId}:completed`,
    ...ids,
    occurredAtUnixMs: BigInt(Date.now()),
    kind: { case: "completed", value: { imagesDelivered } },
  });
}

export function failedEvent(ids: RequestIds, reason = "provider error"): BillingEvent {
  return create(BillingEventSchema, {
    eventId: `${ids.requestId}:failed`,
    ...ids,
    occurredAtUnixMs: BigInt(Date.now()),
    kind: { case: "failed", value: { code: ErrorCode.ASYNC_IMAGE_FAILED, reason } },
  });
}

/** Publishes events as generation's outbox relay would, then waits until billing's consumer has handled them. */
export async function deliver(billing: TestBilling, events: BillingEvent[]): Promise<void> {
  await billing.stream.publish(
    BILLING_TOPIC,
    events.map((event) => ({ id: event.eventId, key: event.accountId, value: toBinary(BillingEventSchema, event) })),
  );
  await billing.stream.waitForGroup(BILLING_TOPIC, LEDGER_GROUP, { timeoutMs: 30_000 });
}

export interface LedgerRow {
  kind: EntryKind;
  requestId: string;
  amountMicros: bigint;
}

export async function ledgerOf(q: Queryable, where: { accountId: string } | { requestId: string }): Promise<LedgerRow[]> {
  const [column, value] = "accountId" in where ? ["account_id", where.accountId] : ["request_id", where.requestId];
  const { rows } = await q.query<{ kind: EntryKind; request_id: string; amount_micros: bigint }>(
    `SELECT kind, request_id, amount_micros FROM billing.ledger WHERE ${column} = $1 ORDER BY entry_id`,
    [value],
  );
  return rows.map((row) => ({ kind: row.kind, requestId: row.request_id, amountMicros: row.amount_micros }));
}

export function countByKind(rows: LedgerRow[]): Record<EntryKind, number> {
  const counts: Record<EntryKind, number> = { top_up: 0, reserve: 0, capture: 0, release: 0, adjustment: 0 };
  for (const row of rows) counts[row.kind] += 1;
  return counts;
}

export async function balanceOf(client: TestBilling["client"], accountId: string) {
  const { balance } = await client.getBalance({ accountId });
  return { balanceMicros: balance!.balanceMicros, heldMicros: balance!.heldMicros, availableMicros: balance!.availableMicros };
}

/** The projection in billing.balances equals the fold of the account's ledger, and nothing is held below zero. */
export async function expectProjectionMatchesLedger(db: Db, accountId: string): Promise<void> {
  const { rows } = await db.query<{ balance_micros: bigint; held_micros: bigint }>(
    "SELECT balance_micros, held_micros FROM billing.balances WHERE account_id = $1",
    [accountId],
  );
  const row = rows[0];
  expect(row, `no balances row for ${accountId}`).toBeDefined();
  const projected = { balanceMicros: row!.balance_micros, heldMicros: row!.held_micros };
  expect(await recomputeFromLedger(db, accountId)).toEqual(projected);
  expect(projected.heldMicros >= 0n).toBe(true);
}

/**
 * This backend's counts for billing's tables. They may include earlier
 * transactions' counts not yet reported, so tests compare two readings taken in
 * one transaction.
 */
export async function tableCounts(q: Queryable): Promise<Record<string, { seqScans: number; updates: number }>> {
  const { rows } = await q.query<{ relname: string; seq_scan: string | number; n_tup_upd: string | number }>(
    "SELECT relname, seq_scan, n_tup_upd FROM pg_stat_xact_user_tables WHERE schemaname = 'billing'",
  );
  return Object.fromEntries(rows.map((row) => [row.relname, { seqScans: Number(row.seq_scan), updates: Number(row.n_tup_upd) }]));
}

class RolledBack extends Error {}

/** Runs fn in a transaction that is then rolled back, and returns what it returned. */
export async function rolledBack<T>(db: Db, fn: (q: Queryable) => Promise<T>): Promise<T> {
  let result: T | undefined;
  await db
    .tx(async (q) => {
      result = await fn(q);
      throw new RolledBack();
    })
    .catch((error) => {
      if (!(error instanceof RolledBack)) throw error;
    });
  return result as T;
}

/** Every billing row of these accounts, in the order written (identity values left out): what reserving and settling change. */
export async function billingRowsOf(q: Queryable, accounts: string[]) {
  const read = async (sql: string) => (await q.query(sql, [accounts])).rows;
  return {
    balances: await read("SELECT account_id, balance_micros, held_micros FROM billing.balances WHERE account_id = ANY($1) ORDER BY account_id"),
    keySpend: await read("SELECT key_id, account_id, captured_micros, held_micros FROM billing.key_spend WHERE account_id = ANY($1) ORDER BY key_id"),
    records: await read(
      "SELECT request_id, account_id, key_id, model, size, tier, images_requested, unit_price_micros, reserved_micros, hold_expires_at, settled_by, images_delivered, captured_micros, released_micros, settled_at IS NOT NULL AS settled FROM billing.cost_records WHERE account_id = ANY($1) ORDER BY request_id",
    ),
    ledger: await read("SELECT kind, account_id, key_id, request_id, amount_micros, reason FROM billing.ledger WHERE account_id = ANY($1) ORDER BY entry_id"),
    // Only the test's own events (ids starting "test:"): the relay deletes others' at any moment.
    outbox: await read("SELECT topic, key, event_id, value FROM billing.outbox WHERE key = ANY($1) AND event_id LIKE 'test:%' ORDER BY seq"),
  };
}
