import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openDb, type Db } from "@orvado/db";
import { countingStatements, usingServer } from "@orvado/testkit";
import { reserve } from "./reserve.ts";
import { CostStatus, ErrorCode, Tier } from "@orvado/proto";
import {
  BETA_1K_MICROS,
  USD,
  balanceOf,
  betaReserve,
  completedEvent,
  countByKind,
  deliver,
  expectProjectionMatchesLedger,
  fundedAccount,
  ledgerOf,
  startTestBilling,
  uniqueId,
  type RequestIds,
  type TestBilling,
} from "./test-support.ts";

// No overdraft, ever: many Reserve calls racing for the same money through the
// RPC hold exactly what the account, or the key's limit, can pay for. Calls that
// arrive while one is in flight share the next statement (reserve.ts), so the
// last test also races several database handles, as billing replicas would:
// their statements are concurrent transactions on PostgreSQL.

const PARALLEL = 200;

let billing: TestBilling;

beforeAll(async () => {
  billing = await startTestBilling();
});
afterAll(async () => {
  await billing?.close();
});

/** Fires PARALLEL one-image reservations at once for one key; returns the ids that got a hold and the refusals. */
async function race(accountId: string, keyLimitMicros?: bigint) {
  const keyId = uniqueId("key");
  const attempts: RequestIds[] = Array.from({ length: PARALLEL }, () => ({ requestId: uniqueId("req"), accountId, keyId }));
  const responses = await Promise.all(attempts.map((ids) => billing.client.reserve(betaReserve(ids, 1, keyLimitMicros))));
  const held: RequestIds[] = [];
  const refusals = [];
  for (const [index, response] of responses.entries()) {
    if (response.result.case === "hold") {
      expect(response.result.value.amountMicros).toBe(BETA_1K_MICROS);
      held.push(attempts[index]!);
    } else if (response.result.case === "refusal") {
      refusals.push(response.result.value);
    } else {
      throw new Error(`reservation ${attempts[index]!.requestId} got neither a hold nor a refusal`);
    }
  }
  return { held, refusals };
}

async function expectAllCharged(accountId: string, held: RequestIds[], topUpMicros: bigint) {
  const entries = await ledgerOf(billing.db, { accountId });
  expect(countByKind(entries)).toEqual({ top_up: 1, reserve: held.length, capture: held.length, release: 0, adjustment: 0 });
  expect(entries.filter((entry) => entry.kind === "top_up").map((entry) => entry.amountMicros)).toEqual([topUpMicros]);
  for (const entry of entries.filter((row) => row.kind !== "top_up")) expect(entry.amountMicros).toBe(BETA_1K_MICROS);
  expect(new Set(entries.filter((entry) => entry.kind === "capture").map((entry) => entry.requestId))).toEqual(
    new Set(held.map((ids) => ids.requestId)),
  );
  for (const ids of held) {
    const { cost } = await billing.client.getCost({ requestId: ids.requestId });
    expect(cost).toMatchObject({ status: CostStatus.CHARGED, amountMicros: BETA_1K_MICROS, imagesDelivered: 1, imagesRequested: 1 });
  }
  await expectProjectionMatchesLedger(billing.db, accountId);
}

describe("no overdraft under parallel reservations", () => {
  it("prices beta 1K at $0.02, which the numbers below rely on", async () => {
    const { prices } = await billing.client.listPrices({});
    expect(prices.find((price) => price.model === "beta" && price.tier === Tier.TIER_1K)?.priceMicros).toBe(BETA_1K_MICROS);
  });

  it(`holds exactly 7 of ${PARALLEL} racing reservations on an account worth exactly 7 images, and charges them down to 0`, async () => {
    const topUpMicros = 7n * BETA_1K_MICROS;
    const accountId = await fundedAccount(billing.client, topUpMicros);

    const { held, refusals } = await race(accountId);
    expect(held).toHaveLength(7);
    expect(refusals).toHaveLength(PARALLEL - 7);
    for (const refusal of refusals) expect(refusal.code).toBe(ErrorCode.INSUFFICIENT_USER_QUOTA);
    expect(await balanceOf(billing.client, accountId)).toEqual({ balanceMicros: topUpMicros, heldMicros: topUpMicros, availableMicros: 0n });

    await deliver(billing, held.map((ids) => completedEvent(ids, 1)));
    expect(await balanceOf(billing.client, accountId)).toEqual({ balanceMicros: 0n, heldMicros: 0n, availableMicros: 0n });
    await expectAllCharged(accountId, held, topUpMicros);
  });

  it(`holds exactly 3 of ${PARALLEL} when the key's limit (3 images) is below the account's balance`, async () => {
    const topUpMicros = 10n * USD;
    const accountId = await fundedAccount(billing.client, topUpMicros);

    const { held, refusals } = await race(accountId, 3n * BETA_1K_MICROS);
    expect(held).toHaveLength(3);
    expect(refusals).toHaveLength(PARALLEL - 3);
    for (const refusal of refusals) expect(refusal.code).toBe(ErrorCode.INSUFFICIENT_USER_QUOTA);
    expect(await balanceOf(billing.client, accountId)).toMatchObject({ balanceMicros: topUpMicros, heldMicros: 3n * BETA_1K_MICROS });

    await deliver(billing, held.map((ids) => completedEvent(ids, 1)));
    expect(await balanceOf(billing.client, accountId)).toEqual({
      balanceMicros: topUpMicros - 3n * BETA_1K_MICROS,
      heldMicros: 0n,
      availableMicros: topUpMicros - 3n * BETA_1K_MICROS,
    });
    await expectAllCharged(accountId, held, topUpMicros);
    const spend = await billing.db.query<{ captured_micros: bigint; held_micros: bigint }>(
      "SELECT captured_micros, held_micros FROM billing.key_spend WHERE key_id = $1",
      [held[0]!.keyId],
    );
    expect(spend.rows).toEqual([{ captured_micros: 3n * BETA_1K_MICROS, held_micros: 0n }]);
  });

  it(`holds exactly 7 of ${PARALLEL} racing across four database handles, each sharing its own statements`, async () => {
    const topUpMicros = 7n * BETA_1K_MICROS;
    const accountId = await fundedAccount(billing.client, topUpMicros);
    // PGlite in memory is one database per handle, so there the handles are one.
    const extra: Db[] = usingServer() ? await Promise.all([1, 2, 3].map(() => openDb(billing.url))) : [];
    const handles = [billing.db, ...extra];
    const counters = handles.map((db) => countingStatements(db));
    const counted = counters.map((counter) => counter.db);
    try {
      const keyId = uniqueId("key");
      const outcomes = await Promise.all(
        Array.from({ length: PARALLEL }, (_, index) =>
          reserve(counted[index % counted.length]!, betaReserve({ requestId: uniqueId("req"), accountId, keyId }), 3_600_000),
        ),
      );
      expect(outcomes.filter((outcome) => "hold" in outcome)).toHaveLength(7);
      expect(outcomes.filter((outcome) => "refusal" in outcome && outcome.refusal.code === ErrorCode.INSUFFICIENT_USER_QUOTA)).toHaveLength(PARALLEL - 7);
      expect(await balanceOf(billing.client, accountId)).toEqual({ balanceMicros: topUpMicros, heldMicros: topUpMicros, availableMicros: 0n });
      // Shared: far fewer statements than reservations.
      const total = counters.reduce((sum, counter) => sum + counter.statements(), 0);
      expect(total).toBeLessThan(PARALLEL / 2);
    } finally {
      await Promise.all(extra.map((db) => db.close()));
    }
  });
});
