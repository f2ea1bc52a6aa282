import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Queryable } from "@orvado/db";
import { USD, billingRowsOf, fundedAccount, heldRequest, rolledBack, startTestBilling, tableCounts, uniqueId, type RequestIds, type TestBilling } from "./test-support.ts";
import { settle } from "./settle.ts";

// billing.settle_requests (sql/functions/settle_requests.sql) runs
// billing.settle_request, the one implementation of a settlement, for each element
// in the events' account order. A batch must end exactly as settle_request called
// for each element in that order: these tests run both on the same data (each in
// a transaction that is rolled back) and compare everything they answer and write.
// Over PostgreSQL's wire protocol when TEST_DATABASE_URL is set, else PGlite in process.

let billing: TestBilling;

beforeAll(async () => {
  billing = await startTestBilling();
});

afterAll(async () => {
  await billing?.close();
});

interface Settling {
  ids: RequestIds;
  kind: "completed" | "failed" | "expired";
  delivered?: number;
  /** The account the event names (by default the request's). */
  eventAccount?: string;
}

const reason = (item: Settling) => (item.kind === "completed" ? "images not delivered" : item.kind === "failed" ? "failed: provider error" : "hold expired unsettled");

const batchCall = (q: Queryable, items: Settling[]) =>
  q.query<Record<string, unknown>>("SELECT item, result FROM billing.settle_requests($1::text[], $2::text[], $3::text[], $4::int[], $5::text[])", [
    items.map((item) => item.ids.requestId),
    items.map((item) => item.eventAccount ?? item.ids.accountId),
    items.map((item) => item.kind),
    items.map((item) => item.delivered ?? 0),
    items.map(reason),
  ]);

/** settle_request for each element in the events' account order, one statement each, answers numbered as the batch numbers them. */
async function loopCall(q: Queryable, items: Settling[]) {
  const account = (item: Settling) => item.eventAccount ?? item.ids.accountId;
  const order = items.map((item, index) => ({ item, number: index + 1 })).sort((a, b) => (account(a.item) < account(b.item) ? -1 : account(a.item) > account(b.item) ? 1 : a.number - b.number));
  const rows: Record<string, unknown>[] = [];
  for (const { item, number } of order) {
    const { rows: answer } = await q.query<Record<string, unknown>>("SELECT $5::int AS item, billing.settle_request($1, $2, $3, $4) AS result", [
      item.ids.requestId,
      item.kind,
      item.delivered ?? 0,
      reason(item),
      number,
    ]);
    rows.push(answer[0]!);
  }
  return rows;
}

const byItem = (rows: Record<string, unknown>[]) => [...rows].sort((a, b) => Number(a.item) - Number(b.item));

async function expectSameAsLoop(items: Settling[]) {
  const accounts = [...new Set(items.map((item) => item.ids.accountId))];
  const batch = await rolledBack(billing.db, async (q) => {
    const before = await tableCounts(q);
    const { rows } = await batchCall(q, items);
    const after = await tableCounts(q);
    return { rows: byItem(rows), state: await billingRowsOf(q, accounts), updates: after.balances!.updates - before.balances!.updates };
  });
  const loop = await rolledBack(billing.db, async (q) => ({ rows: byItem(await loopCall(q, items)), state: await billingRowsOf(q, accounts) }));
  expect(batch.rows).toEqual(loop.rows);
  expect(batch.state).toEqual(loop.state);
  return batch;
}

const held = (accountId: string, images = 1) => heldRequest(billing.client, accountId, images);

describe("billing.settle_requests, a batch of settlements", () => {
  it("settles open holds of one account, in part or in full, as settle_request one by one would", async () => {
    const a = await fundedAccount(billing.client, 1n * USD);
    const [r1, r2, r3, r4] = [await held(a, 2), await held(a, 3), await held(a), await held(a, 4)];
    const batch = await expectSameAsLoop([
      { ids: r1!, kind: "completed", delivered: 2 },
      { ids: r2!, kind: "completed", delivered: 1 }, // part delivered: the rest released
      { ids: r3!, kind: "failed" },
      { ids: r4!, kind: "expired" },
    ]);
    expect(batch.rows.map((row) => row.result)).toEqual(["applied", "applied", "applied", "applied"]);
  });

  it("settles across accounts, named in any order, as settle_request one by one would", async () => {
    const [a, b, c] = [await fundedAccount(billing.client, 1n * USD), await fundedAccount(billing.client, 1n * USD), await fundedAccount(billing.client, 1n * USD)];
    const items: Settling[] = [
      { ids: await held(c), kind: "completed", delivered: 1 },
      { ids: await held(a, 2), kind: "completed", delivered: 5 }, // more than requested: capped
      { ids: await held(b), kind: "failed" },
      { ids: await held(a), kind: "completed", delivered: 0 },
      { ids: await held(c, 3), kind: "completed", delivered: 3 },
    ];
    const batch = await expectSameAsLoop(items);
    expect(batch.rows.every((row) => row.result === "applied")).toBe(true);
  });

  it("tolerates duplicates, a completion after a release, an unknown request or one named twice, as one by one would", async () => {
    const a = await fundedAccount(billing.client, 1n * USD);
    const released = await held(a);
    await settle(billing.db, released.requestId, { kind: "failed", reason: "provider error" });
    const done = await held(a);
    await settle(billing.db, done.requestId, { kind: "completed", imagesDelivered: 1 });
    const twice = await held(a);
    const cases: Settling[][] = [
      [{ ids: await held(a), kind: "completed", delivered: 1 }, { ids: released, kind: "completed", delivered: 1 }], // late completion charges
      [{ ids: await held(a), kind: "failed" }, { ids: done, kind: "failed" }], // duplicate
      [{ ids: await held(a), kind: "failed" }, { ids: { ...done, requestId: uniqueId("req_unknown") }, kind: "completed", delivered: 1 }],
      [{ ids: twice, kind: "failed" }, { ids: twice, kind: "completed", delivered: 1 }],
    ];
    for (const items of cases) {
      const batch = await expectSameAsLoop(items);
      // The balance moves once per settlement applied, none for a duplicate or an unknown request.
      expect(batch.updates).toBe(batch.rows.filter((row) => row.result === "applied").length);
    }
  });

  it("takes the money from the cost record, whatever account the event names", async () => {
    const [a, b] = [await fundedAccount(billing.client, 1n * USD), await fundedAccount(billing.client, 1n * USD)];
    const batch = await expectSameAsLoop([
      { ids: await held(a), kind: "completed", delivered: 1, eventAccount: b },
      { ids: await held(b), kind: "completed", delivered: 1 },
    ]);
    expect(batch.rows.map((row) => row.result)).toEqual(["applied", "applied"]);
  });

  it("reads no table in full, whatever size the tables had when its plans were made", async () => {
    const small = await fundedAccount(billing.client, 1n * USD);
    const first = [await held(small), await held(small)];
    await billing.db.tx((q) => batchCall(q, first.map((ids) => ({ ids, kind: "completed", delivered: 1 }))));
    const accountId = await fundedAccount(billing.client, 100n * USD);
    const many = await Promise.all(Array.from({ length: 1_500 }, () => held(accountId)));
    const scans = await billing.db.tx(async (q) => {
      const before = await tableCounts(q);
      const { rows } = await batchCall(q, many.slice(0, 20).map((ids) => ({ ids, kind: "completed", delivered: 1 })));
      expect(rows.every((row) => row.result === "applied")).toBe(true);
      const after = await tableCounts(q);
      const tables = ["cost_records", "balances", "key_spend", "ledger"];
      return Object.fromEntries(tables.map((table) => [table, (after[table]?.seqScans ?? 0) - (before[table]?.seqScans ?? 0)]));
    });
    expect(scans).toEqual({ cost_records: 0, balances: 0, key_spend: 0, ledger: 0 });
  });
});
