import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Db, Queryable } from "@orvado/db";
import { countingStatements } from "@orvado/testkit";
import { reserve } from "./reserve.ts";
import { BETA_1K_MICROS, USD, betaReserve, fundedAccount, heldRequest, billingRowsOf, rolledBack, startTestBilling, tableCounts, uniqueId, type TestBilling } from "./test-support.ts";

// billing.reserve_holds (sql/functions/reserve_holds.sql) runs billing.reserve_hold,
// the one implementation of a reservation, for each element in account order. A
// batch must end exactly as reserve_hold called for each element in that order:
// these tests run both on the same data (each in a transaction that is rolled
// back) and compare everything they answer and write. Over PostgreSQL's wire
// protocol when TEST_DATABASE_URL is set, else PGlite in process.

let billing: TestBilling;

beforeAll(async () => {
  billing = await startTestBilling();
});

afterAll(async () => {
  await billing?.close();
});

interface Hold {
  requestId: string;
  accountId: string;
  keyId: string;
  keyLimit?: bigint | null;
  images?: number;
  expectedPrice?: bigint;
}

const EXPIRES = new Date("2031-01-01T00:00:00Z");

function columns(holds: Hold[]) {
  return [
    holds.map((h) => h.requestId),
    holds.map((h) => h.accountId),
    holds.map((h) => h.keyId),
    holds.map((h) => (h.keyLimit === undefined || h.keyLimit === null ? null : h.keyLimit.toString())),
    holds.map(() => "beta"),
    holds.map(() => "1K"),
    holds.map(() => "1024x1024"),
    holds.map((h) => h.images ?? 1),
    holds.map(() => EXPIRES),
    holds.map((h) => (h.expectedPrice ?? BETA_1K_MICROS).toString()),
    holds.map((h) => `hold for ${h.requestId}`),
  ];
}

const batchCall = (q: Queryable, holds: Hold[]) =>
  q.query<Record<string, unknown>>(
    `SELECT item, outcome, unit_price_micros, amount_micros, hold_expires_at, left_micros
       FROM billing.reserve_holds($1::text[], $2::text[], $3::text[], $4::bigint[], $5::text[], $6::text[], $7::text[], $8::int[],
                                  $9::timestamptz[], $10::bigint[], $11::text[], 'billing', $12::text[], $13::bytea[])`,
    [...columns(holds), holds.map((h) => `test:${h.requestId}`), holds.map((h) => Buffer.from(h.requestId))],
  );

/** reserve_hold for each element in account order, one statement each, answers numbered as the batch numbers them. */
async function loopCall(q: Queryable, holds: Hold[]) {
  const order = holds.map((hold, index) => ({ hold, item: index + 1 })).sort((a, b) => (a.hold.accountId < b.hold.accountId ? -1 : a.hold.accountId > b.hold.accountId ? 1 : a.item - b.item));
  const rows: Record<string, unknown>[] = [];
  for (const { hold, item } of order) {
    const { rows: answer } = await q.query<Record<string, unknown>>(
      `SELECT $14::int AS item, outcome, unit_price_micros, amount_micros, hold_expires_at, left_micros
         FROM billing.reserve_hold($1, $2, $3, $4::bigint, $5, $6, $7, $8::int, $9::timestamptz, $10::bigint, $11, 'billing', $12, $13::bytea) AS h`,
      [...columns([hold]).map((column) => column[0]), `test:${hold.requestId}`, Buffer.from(hold.requestId), item],
    );
    rows.push(answer[0]!);
  }
  return { rows };
}

const byItem = (rows: Record<string, unknown>[]) => [...rows].sort((a, b) => Number(a.item) - Number(b.item));

/** The batch and the calls one by one on the same data; returns the batch's answers and what it wrote. */
async function expectSameAsLoop(holds: Hold[]) {
  const accounts = [...new Set(holds.map((h) => h.accountId))];
  const batch = await rolledBack(billing.db, async (q) => {
    const { rows } = await batchCall(q, holds);
    return { rows: byItem(rows), state: await billingRowsOf(q, accounts) };
  });
  const loop = await rolledBack(billing.db, async (q) => {
    const { rows } = await loopCall(q, holds);
    return { rows: byItem(rows), state: await billingRowsOf(q, accounts) };
  });
  expect(batch.rows).toEqual(loop.rows);
  expect(batch.state).toEqual(loop.state);
  return batch;
}

const hold = (accountId: string, extra: Partial<Hold> = {}): Hold => ({ requestId: uniqueId("req"), accountId, keyId: `key_of_${accountId}`, ...extra });

describe("billing.reserve_holds, a batch of reservations", () => {
  it("makes one account's holds, each seeing the ones before it, as reserve_hold one by one would", async () => {
    const a = await fundedAccount(billing.client, 1n * USD);
    const batch = await expectSameAsLoop([hold(a), hold(a, { images: 3 }), hold(a), hold(a, { images: 2 })]);
    expect(batch.rows.map((row) => row.outcome)).toEqual(["held", "held", "held", "held"]);
    // What was left before each hold, in the batch's order.
    expect(batch.rows.map((row) => BigInt(row.left_micros as bigint))).toEqual([1_000_000n, 980_000n, 920_000n, 900_000n]);
    expect(batch.state.outbox).toHaveLength(4);
  });

  it("interleaved accounts and keys, some with a limit, as reserve_hold one by one would", async () => {
    const [a, b, c] = [await fundedAccount(billing.client, 1n * USD), await fundedAccount(billing.client, 2n * USD), await fundedAccount(billing.client, 1n * USD)];
    const limited = { keyId: uniqueId("key"), keyLimit: 200_000n };
    const batch = await expectSameAsLoop([
      hold(b),
      hold(a, limited),
      hold(c, { images: 2 }),
      hold(a),
      hold(a, { ...limited, images: 4 }),
      hold(b, { keyId: uniqueId("key") }),
      hold(a, limited),
    ]);
    expect(batch.rows.every((row) => row.outcome === "held")).toBe(true);
  });

  it("refuses, as reserve_hold one by one would, a hold over the account or a key's limit, at a changed price, or repeating a request", async () => {
    const a = await fundedAccount(billing.client, 100_000n);
    const b = await fundedAccount(billing.client, 1n * USD);
    const existing = await heldRequest(billing.client, b, 1);
    const limited = { keyId: uniqueId("key"), keyLimit: 50_000n };
    const twice = uniqueId("req");
    const shared = uniqueId("key");
    const cases: Hold[][] = [
      [hold(a, { images: 3 }), hold(a, { images: 3 }), hold(b)], // the second is over a's balance
      [hold(b, limited), hold(b, limited), hold(b, limited)], // the third is over the key's limit
      [hold(b), hold(b, { expectedPrice: BETA_1K_MICROS + 1n })], // price_changed
      [hold(b), { ...hold(b), requestId: existing.requestId, keyId: existing.keyId }], // existing
      [{ ...hold(b), requestId: twice }, { ...hold(b), requestId: twice }], // the same request twice
      [hold(uniqueId("acct_without_balance")), hold(b)], // no balances row
      [hold(b, { keyId: shared, keyLimit: 100_000n }), hold(b, { keyId: shared, keyLimit: 30_000n })], // two limits for one key
    ];
    for (const holds of cases) {
      const batch = await expectSameAsLoop(holds);
      expect(batch.rows.map((row) => row.outcome)).not.toEqual(holds.map(() => "held"));
    }
  });

  it("fills a key's limit exactly, each hold answering what was left before it", async () => {
    const a = await fundedAccount(billing.client, 1n * USD);
    const limited = { keyId: uniqueId("key"), keyLimit: 3n * BETA_1K_MICROS };
    const batch = await expectSameAsLoop([hold(a, limited), hold(a, limited), hold(a, limited)]);
    expect(batch.rows.map((row) => row.outcome)).toEqual(["held", "held", "held"]);
    expect(batch.rows.map((row) => BigInt(row.left_micros as bigint))).toEqual([60_000n, 40_000n, 20_000n]);
  });

  it("reads no table in full, whatever size the tables had when its plans were made", async () => {
    // Plans are made (and cached by PL/pgSQL for the session) on small tables first.
    const small = await fundedAccount(billing.client, 1n * USD);
    await billing.db.tx((q) => batchCall(q, [hold(small), hold(small)]));
    const accountId = await fundedAccount(billing.client, 100n * USD);
    await Promise.all(Array.from({ length: 1_500 }, () => heldRequest(billing.client, accountId, 1)));
    const limited = { keyId: uniqueId("key"), keyLimit: 10n * USD };
    const scans = await billing.db.tx(async (q) => {
      const before = await tableCounts(q);
      const { rows } = await batchCall(q, Array.from({ length: 20 }, (_, index) => hold(accountId, index % 2 ? limited : {})));
      expect(rows.every((row) => row.outcome === "held")).toBe(true);
      const after = await tableCounts(q);
      const tables = ["cost_records", "balances", "key_spend", "ledger"];
      return Object.fromEntries(tables.map((table) => [table, (after[table]?.seqScans ?? 0) - (before[table]?.seqScans ?? 0)]));
    });
    expect(scans).toEqual({ cost_records: 0, balances: 0, key_spend: 0, ledger: 0 });
  });

  it("is used for concurrent reservations; a reservation alone is one billing.reserve_hold call, which costs less for one", async () => {
    const accountId = await fundedAccount(billing.client, 1n * USD);
    const reserveOne = (db: Db) => reserve(db, betaReserve({ requestId: uniqueId("req"), accountId, keyId: uniqueId("key") }), 3_600_000);
    const alone = countingStatements(billing.db);
    expect(await reserveOne(alone.db)).toHaveProperty("hold");
    expect(alone.texts().filter((sql) => sql.includes("billing.reserve_hold"))).toEqual([expect.stringContaining("billing.reserve_hold(")]);
    const together = countingStatements(billing.db);
    const outcomes = await Promise.all(Array.from({ length: 12 }, () => reserveOne(together.db)));
    expect(outcomes.every((outcome) => "hold" in outcome)).toBe(true);
    expect(together.texts().some((sql) => sql.includes("billing.reserve_holds("))).toBe(true);
  });
});
