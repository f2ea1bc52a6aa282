import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CostStatus } from "@orvado/proto";
import {
  BETA_1K_MICROS,
  balanceOf,
  betaReserve,
  countByKind,
  expectProjectionMatchesLedger,
  fundedAccount,
  ledgerOf,
  startTestBilling,
  uniqueId,
  type TestBilling,
} from "./test-support.ts";

// A retried Reserve (the edge timed out, a client retried) must never hold twice,
// nor be refused for money its own first attempt is holding.

let billing: TestBilling;

beforeAll(async () => {
  billing = await startTestBilling();
});
afterAll(async () => {
  await billing?.close();
});

describe("Reserve is idempotent per request id", () => {
  it("holds once when called twice with the same request id", async () => {
    const accountId = await fundedAccount(billing.client, 10n * BETA_1K_MICROS);
    const ids = { requestId: uniqueId("req"), accountId, keyId: uniqueId("key") };

    const first = await billing.client.reserve(betaReserve(ids, 2));
    const second = await billing.client.reserve(betaReserve(ids, 2));
    expect(first.result.case).toBe("hold");
    expect(second.result).toEqual(first.result);
    expect(first.result.value).toMatchObject({ requestId: ids.requestId, amountMicros: 2n * BETA_1K_MICROS, unitPriceMicros: BETA_1K_MICROS });

    expect(await balanceOf(billing.client, accountId)).toMatchObject({ heldMicros: 2n * BETA_1K_MICROS });
    expect(countByKind(await ledgerOf(billing.db, { requestId: ids.requestId })).reserve).toBe(1);
    const { cost } = await billing.client.getCost({ requestId: ids.requestId });
    expect(cost).toMatchObject({ status: CostStatus.PENDING, imagesRequested: 2 });
    await expectProjectionMatchesLedger(billing.db, accountId);
  });

  it("returns the same hold to every one of many simultaneous calls with one request id, even when the money covers only one", async () => {
    const accountId = await fundedAccount(billing.client, BETA_1K_MICROS);
    const ids = { requestId: uniqueId("req"), accountId, keyId: uniqueId("key") };

    const responses = await Promise.all(Array.from({ length: 20 }, () => billing.client.reserve(betaReserve(ids, 1))));
    for (const response of responses) {
      expect(response.result.case).toBe("hold");
      expect(response.result).toEqual(responses[0]!.result);
    }

    expect(await balanceOf(billing.client, accountId)).toEqual({ balanceMicros: BETA_1K_MICROS, heldMicros: BETA_1K_MICROS, availableMicros: 0n });
    expect(countByKind(await ledgerOf(billing.db, { requestId: ids.requestId })).reserve).toBe(1);
    await expectProjectionMatchesLedger(billing.db, accountId);
  });
});
