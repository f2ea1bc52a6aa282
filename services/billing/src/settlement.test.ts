import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CostStatus } from "@orvado/proto";
import { reserve } from "./reserve.ts";
import { releaseExpiredHolds } from "./sweeper.ts";
import { settle, settleBatch, type RequestSettlement } from "./settle.ts";
import {
  BETA_1K_MICROS,
  USD,
  balanceOf,
  betaReserve,
  completedEvent,
  countByKind,
  deliver,
  expectProjectionMatchesLedger,
  failedEvent,
  fundedAccount,
  heldRequest,
  ledgerOf,
  startTestBilling,
  uniqueId,
  type RequestIds,
  type TestBilling,
} from "./test-support.ts";

// Settling a hold: capture what was delivered, release the rest, exactly once,
// whatever order and however often the events arrive. The client calls billing
// over HTTP/2 (Connect), as the edge and generation do from their own processes.

let billing: TestBilling;

beforeAll(async () => {
  billing = await startTestBilling({ transport: "http2" });
});
afterAll(async () => {
  await billing?.close();
});

const cost = async (requestId: string) => (await billing.client.getCost({ requestId })).cost!;
const ledgerOfRequest = async (requestId: string) =>
  (await ledgerOf(billing.db, { requestId })).map((entry) => [entry.kind, entry.amountMicros]);

/** Reserves directly with a hold that is already past its expiry. */
async function expiredHold(accountId: string, imagesRequested: number): Promise<RequestIds> {
  const ids = { requestId: uniqueId("req"), accountId, keyId: uniqueId("key") };
  const outcome = await reserve(billing.db, betaReserve(ids, imagesRequested), -60_000);
  expect("hold" in outcome).toBe(true);
  return ids;
}

describe("settlement", () => {
  it("charges the 2 images delivered of 3 and releases the third", async () => {
    const accountId = await fundedAccount(billing.client, 1n * USD);
    const ids = await heldRequest(billing.client, accountId, 3);
    expect(await balanceOf(billing.client, accountId)).toMatchObject({ balanceMicros: 1n * USD, heldMicros: 3n * BETA_1K_MICROS });

    await deliver(billing, [completedEvent(ids, 2)]);

    expect(await balanceOf(billing.client, accountId)).toEqual({
      balanceMicros: 1n * USD - 2n * BETA_1K_MICROS,
      heldMicros: 0n,
      availableMicros: 1n * USD - 2n * BETA_1K_MICROS,
    });
    expect(await cost(ids.requestId)).toMatchObject({
      status: CostStatus.CHARGED,
      imagesRequested: 3,
      imagesDelivered: 2,
      unitPriceMicros: BETA_1K_MICROS,
      amountMicros: 2n * BETA_1K_MICROS,
    });
    expect(await ledgerOfRequest(ids.requestId)).toEqual([
      ["reserve", 3n * BETA_1K_MICROS],
      ["capture", 2n * BETA_1K_MICROS],
      ["release", BETA_1K_MICROS],
    ]);
    await expectProjectionMatchesLedger(billing.db, accountId);
  });

  it("charges nothing for a failed request and releases its whole hold", async () => {
    const accountId = await fundedAccount(billing.client, 1n * USD);
    const ids = await heldRequest(billing.client, accountId, 3);

    await deliver(billing, [failedEvent(ids)]);

    expect(await balanceOf(billing.client, accountId)).toEqual({ balanceMicros: 1n * USD, heldMicros: 0n, availableMicros: 1n * USD });
    expect(await cost(ids.requestId)).toMatchObject({ status: CostStatus.NOT_CHARGED, imagesDelivered: 0, amountMicros: 0n });
    expect(await ledgerOfRequest(ids.requestId)).toEqual([
      ["reserve", 3n * BETA_1K_MICROS],
      ["release", 3n * BETA_1K_MICROS],
    ]);
    await expectProjectionMatchesLedger(billing.db, accountId);
  });

  it("charges a completed once however many times it is delivered", async () => {
    const accountId = await fundedAccount(billing.client, 1n * USD);
    const ids = await heldRequest(billing.client, accountId, 2);

    const completed = completedEvent(ids, 2);
    await deliver(billing, [completed, completed, completed]);
    await deliver(billing, [completed]);

    expect(await balanceOf(billing.client, accountId)).toMatchObject({ balanceMicros: 1n * USD - 2n * BETA_1K_MICROS, heldMicros: 0n });
    expect(await ledgerOfRequest(ids.requestId)).toEqual([
      ["reserve", 2n * BETA_1K_MICROS],
      ["capture", 2n * BETA_1K_MICROS],
    ]);
    await expectProjectionMatchesLedger(billing.db, accountId);
  });

  it("never charges more images than were reserved", async () => {
    const accountId = await fundedAccount(billing.client, 1n * USD);
    const ids = await heldRequest(billing.client, accountId, 2);

    await deliver(billing, [completedEvent(ids, 5)]);

    expect(await cost(ids.requestId)).toMatchObject({ status: CostStatus.CHARGED, imagesDelivered: 2, amountMicros: 2n * BETA_1K_MICROS });
    expect(await balanceOf(billing.client, accountId)).toMatchObject({ balanceMicros: 1n * USD - 2n * BETA_1K_MICROS, heldMicros: 0n });
    await expectProjectionMatchesLedger(billing.db, accountId);
  });

  it("still charges a completed that arrives after the hold expired and was released", async () => {
    const accountId = await fundedAccount(billing.client, 1n * USD);
    const ids = await expiredHold(accountId, 3);

    await releaseExpiredHolds(billing.db, billing.logger);
    expect(await cost(ids.requestId)).toMatchObject({ status: CostStatus.NOT_CHARGED, amountMicros: 0n });
    expect(await balanceOf(billing.client, accountId)).toEqual({ balanceMicros: 1n * USD, heldMicros: 0n, availableMicros: 1n * USD });

    await deliver(billing, [completedEvent(ids, 2)]);

    expect(await cost(ids.requestId)).toMatchObject({ status: CostStatus.CHARGED, imagesDelivered: 2, amountMicros: 2n * BETA_1K_MICROS });
    expect(await balanceOf(billing.client, accountId)).toEqual({
      balanceMicros: 1n * USD - 2n * BETA_1K_MICROS,
      heldMicros: 0n,
      availableMicros: 1n * USD - 2n * BETA_1K_MICROS,
    });
    expect(await ledgerOfRequest(ids.requestId)).toEqual([
      ["reserve", 3n * BETA_1K_MICROS],
      ["release", 3n * BETA_1K_MICROS],
      ["capture", 2n * BETA_1K_MICROS],
    ]);
    await expectProjectionMatchesLedger(billing.db, accountId);
  });

  it("keeps held exact (never negative) when a late completed charges money another hold has since taken", async () => {
    const accountId = await fundedAccount(billing.client, BETA_1K_MICROS);
    const late = await expiredHold(accountId, 1);
    await releaseExpiredHolds(billing.db, billing.logger);
    const next = await heldRequest(billing.client, accountId, 1);
    expect(await balanceOf(billing.client, accountId)).toEqual({ balanceMicros: BETA_1K_MICROS, heldMicros: BETA_1K_MICROS, availableMicros: 0n });

    await deliver(billing, [completedEvent(late, 1)]);
    // The image was delivered, so it is charged; the other request's hold is untouched.
    expect(await balanceOf(billing.client, accountId)).toEqual({ balanceMicros: 0n, heldMicros: BETA_1K_MICROS, availableMicros: -BETA_1K_MICROS });
    await expectProjectionMatchesLedger(billing.db, accountId);
    const refused = await billing.client.reserve(betaReserve({ requestId: uniqueId("req"), accountId, keyId: uniqueId("key") }));
    expect(refused.result.case).toBe("refusal");

    await deliver(billing, [completedEvent(next, 1)]);
    expect(await balanceOf(billing.client, accountId)).toEqual({ balanceMicros: -BETA_1K_MICROS, heldMicros: 0n, availableMicros: -BETA_1K_MICROS });
    await expectProjectionMatchesLedger(billing.db, accountId);
  });

  it("ignores an expiry, a failed or a second completed once a request is completed", async () => {
    const accountId = await fundedAccount(billing.client, 1n * USD);
    const ids = await expiredHold(accountId, 2);
    await deliver(billing, [completedEvent(ids, 1)]);
    const before = await ledgerOfRequest(ids.requestId);

    await releaseExpiredHolds(billing.db, billing.logger);
    await deliver(billing, [failedEvent(ids), completedEvent(ids, 2)]);

    expect(await ledgerOfRequest(ids.requestId)).toEqual(before);
    expect(before).toEqual([
      ["reserve", 2n * BETA_1K_MICROS],
      ["capture", BETA_1K_MICROS],
      ["release", BETA_1K_MICROS],
    ]);
    expect(await cost(ids.requestId)).toMatchObject({ status: CostStatus.CHARGED, imagesDelivered: 1, amountMicros: BETA_1K_MICROS });
    expect(await balanceOf(billing.client, accountId)).toMatchObject({ balanceMicros: 1n * USD - BETA_1K_MICROS, heldMicros: 0n });
    await expectProjectionMatchesLedger(billing.db, accountId);
  });

  it("charges a completed even when a stray failed for the same request arrived first (order does not decide the outcome)", async () => {
    const accountId = await fundedAccount(billing.client, 1n * USD);
    const ids = await heldRequest(billing.client, accountId, 2);

    await deliver(billing, [failedEvent(ids), completedEvent(ids, 2), failedEvent(ids)]);

    expect(await cost(ids.requestId)).toMatchObject({ status: CostStatus.CHARGED, imagesDelivered: 2, amountMicros: 2n * BETA_1K_MICROS });
    expect(await balanceOf(billing.client, accountId)).toMatchObject({ balanceMicros: 1n * USD - 2n * BETA_1K_MICROS, heldMicros: 0n });
    expect(countByKind(await ledgerOf(billing.db, { requestId: ids.requestId }))).toMatchObject({ reserve: 1, capture: 1, release: 1 });
    await expectProjectionMatchesLedger(billing.db, accountId);
  });

  it("reports a settlement for a request it never reserved without touching any money", async () => {
    const accountId = await fundedAccount(billing.client, 1n * USD);
    const ghost = { requestId: uniqueId("req"), accountId, keyId: uniqueId("key") };

    await deliver(billing, [completedEvent(ghost, 1), failedEvent(ghost)]);

    expect(await ledgerOf(billing.db, { requestId: ghost.requestId })).toEqual([]);
    expect(await balanceOf(billing.client, accountId)).toMatchObject({ balanceMicros: 1n * USD, heldMicros: 0n });
  });
});

describe("settlement in batches (settleBatch, what the consumer uses)", () => {
  /** The same settlements, in the same order, over fresh holds: once in one batch, once one by one. */
  async function scenario() {
    const [a, b] = await Promise.all([fundedAccount(billing.client, 1n * USD), fundedAccount(billing.client, 1n * USD)]);
    const [a1, a2, b1] = [await heldRequest(billing.client, a, 3), await heldRequest(billing.client, a, 2), await heldRequest(billing.client, b, 1)];
    const ghost = { requestId: uniqueId("req"), accountId: b, keyId: uniqueId("key") };
    const items: RequestSettlement[] = [
      { ...b1, settlement: { kind: "completed", imagesDelivered: 1 } },
      { ...a1, settlement: { kind: "failed", reason: "provider error" } },
      { ...ghost, settlement: { kind: "completed", imagesDelivered: 1 } },
      { ...a1, settlement: { kind: "completed", imagesDelivered: 2 } },
      { ...a2, settlement: { kind: "completed", imagesDelivered: 2 } },
      { ...a2, settlement: { kind: "completed", imagesDelivered: 2 } },
    ];
    return { accounts: [a, b], requests: [a1, a2, b1, ghost].map((ids) => ids.requestId), items };
  }

  async function outcome(accounts: string[], requests: string[]) {
    return {
      balances: await Promise.all(accounts.map((accountId) => balanceOf(billing.client, accountId))),
      ledgers: await Promise.all(requests.map(ledgerOfRequest)),
    };
  }

  it("gives each settlement the result, and the books the entries, that one by one would, in the order given", async () => {
    const batched = await scenario();
    const batchResults = await settleBatch(billing.db, batched.items);
    const single = await scenario();
    const singleResults: string[] = [];
    for (const item of single.items) singleResults.push(await settle(billing.db, item.requestId, item.settlement));

    expect(batchResults).toEqual(["applied", "applied", "unknown_request", "applied", "applied", "duplicate"]);
    expect(batchResults).toEqual(singleResults);
    expect(await outcome(batched.accounts, batched.requests)).toEqual(await outcome(single.accounts, single.requests));
    // The completed after a failed for the same request still charged its 2 images.
    expect(await ledgerOfRequest(batched.requests[0]!)).toEqual([
      ["reserve", 3n * BETA_1K_MICROS],
      ["release", 3n * BETA_1K_MICROS],
      ["capture", 2n * BETA_1K_MICROS],
    ]);
    for (const accountId of batched.accounts) await expectProjectionMatchesLedger(billing.db, accountId);
  });

  it("applies nothing of a batch one of whose settlements fails", async () => {
    const { accounts, requests, items } = await scenario();
    // A kind settle_request does not know fails its element (no release reason, no such status) after others ran.
    const [a] = accounts;
    const victim = await heldRequest(billing.client, a!, 1);
    const broken = { ...victim, settlement: { kind: "bogus" } } as unknown as RequestSettlement;
    const before = await outcome(accounts, [...requests, victim.requestId]);
    await expect(settleBatch(billing.db, [...items, broken])).rejects.toThrow(/violates/);
    expect(await outcome(accounts, [...requests, victim.requestId])).toEqual(before);
  });

  it("settles many events in few statements through the consumer", async () => {
    const accountId = await fundedAccount(billing.client, 10n * USD);
    const held = await Promise.all(Array.from({ length: 60 }, () => heldRequest(billing.client, accountId, 1)));
    const calls = await settleCallsDuring(() => deliver(billing, held.map((ids) => completedEvent(ids, 1))));

    expect(calls.batch).toBeGreaterThanOrEqual(1);
    expect(calls.batch + calls.single).toBeLessThan(held.length / 2);
    expect(await balanceOf(billing.client, accountId)).toMatchObject({ balanceMicros: 10n * USD - 60n * BETA_1K_MICROS, heldMicros: 0n });
    await expectProjectionMatchesLedger(billing.db, accountId);
  });

  it("reads only the cost records it settles, however many the table holds (no scan of cost_records per batch)", async () => {
    // Enough records that a lookup by request id takes the index, and few enough
    // that a join of the batch against the table was planned as a full scan of it.
    const accountId = await fundedAccount(billing.client, 100n * USD);
    const held = await Promise.all(Array.from({ length: 1_500 }, () => heldRequest(billing.client, accountId, 1)));
    const batch = held.slice(0, 20);
    const read = await billing.db.tx(async (q) => {
      await q.query("SELECT * FROM billing.settle_requests($1::text[], $2::text[], $3::text[], $4::int[], $5::text[])", [
        batch.map((ids) => ids.requestId),
        batch.map((ids) => ids.accountId),
        batch.map(() => "completed"),
        batch.map(() => 1),
        batch.map(() => "images not delivered"),
      ]);
      // This transaction's own counts, before they are merged into the table's totals.
      const { rows } = await q.query<{ seq_scan: string | number }>(
        "SELECT seq_scan FROM pg_stat_xact_user_tables WHERE schemaname = 'billing' AND relname = 'cost_records'",
      );
      return Number(rows[0]?.seq_scan ?? 0);
    });
    expect(read).toBe(0);
    expect(await balanceOf(billing.client, accountId)).toMatchObject({ balanceMicros: 100n * USD - 20n * BETA_1K_MICROS });
  });
});

/** How many settle_request and settle_requests statements billing's database ran while `run` did. */
async function settleCallsDuring(run: () => Promise<void>): Promise<{ single: number; batch: number }> {
  const original = billing.db.query;
  const calls = { single: 0, batch: 0 };
  billing.db.query = ((sql: string, ...rest: unknown[]) => {
    if (sql.includes("billing.settle_requests(")) calls.batch += 1;
    else if (sql.includes("billing.settle_request(")) calls.single += 1;
    return (original as (...args: unknown[]) => unknown).call(billing.db, sql, ...rest);
  }) as typeof billing.db.query;
  try {
    await run();
  } finally {
    billing.db.query = original;
  }
  return calls;
}
