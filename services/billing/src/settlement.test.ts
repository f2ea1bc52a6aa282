import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CostStatus } from "@orvado/proto";
import { reserve } from "./reserve.ts";
import { releaseExpiredHolds } from "./sweeper.ts";
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
// whatever order and however often the events arrive.

let billing: TestBilling;

beforeAll(async () => {
  billing = await startTestBilling();
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
