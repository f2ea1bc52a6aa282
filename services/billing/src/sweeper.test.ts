import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CostStatus } from "@orvado/proto";
import { reserve } from "./reserve.ts";
import { releaseExpiredHolds } from "./sweeper.ts";
import {
  BETA_1K_MICROS,
  USD,
  balanceOf,
  betaReserve,
  expectProjectionMatchesLedger,
  fundedAccount,
  heldRequest,
  ledgerOf,
  startTestBilling,
  uniqueId,
  type TestBilling,
} from "./test-support.ts";

// A hold nobody settles (a crashed job) must not stay held forever: the sweeper
// releases it once it expires, once, and leaves live holds alone.

const SHORT_TTL_MS = 1000;
const HOUR_MS = 3_600_000;

let billing: TestBilling;

beforeAll(async () => {
  // Holds made through the RPC in this file expire after SHORT_TTL_MS.
  billing = await startTestBilling({ holdTtlMs: SHORT_TTL_MS });
});
afterAll(async () => {
  await billing?.close();
});

/** Waits until the database's clock is past the hold's expiry (a condition, not a duration). */
async function waitUntilExpired(requestId: string): Promise<void> {
  for (;;) {
    const { rows } = await billing.db.query<{ expired: boolean }>(
      "SELECT hold_expires_at < now() AS expired FROM billing.cost_records WHERE request_id = $1",
      [requestId],
    );
    if (rows[0]?.expired) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const ledgerSize = async () => (await billing.db.query<{ n: bigint }>("SELECT count(*) AS n FROM billing.ledger")).rows[0]!.n;

describe("expired holds", () => {
  it("are released by the sweeper, once, while live holds stay held", async () => {
    const accountId = await fundedAccount(billing.client, 1n * USD);
    const abandoned = await heldRequest(billing.client, accountId, 3);
    const otherAccountId = await fundedAccount(billing.client, 1n * USD);
    const live = { requestId: uniqueId("req"), accountId: otherAccountId, keyId: uniqueId("key") };
    expect("hold" in (await reserve(billing.db, betaReserve(live, 1), HOUR_MS))).toBe(true);
    expect(await balanceOf(billing.client, accountId)).toMatchObject({ heldMicros: 3n * BETA_1K_MICROS });

    await waitUntilExpired(abandoned.requestId);
    expect(await releaseExpiredHolds(billing.db, billing.logger)).toBe(1);

    expect(await balanceOf(billing.client, accountId)).toEqual({ balanceMicros: 1n * USD, heldMicros: 0n, availableMicros: 1n * USD });
    const { cost } = await billing.client.getCost({ requestId: abandoned.requestId });
    expect(cost).toMatchObject({ status: CostStatus.NOT_CHARGED, amountMicros: 0n, imagesDelivered: 0 });
    expect(cost!.settledAtUnixMs).toBeDefined();
    expect((await ledgerOf(billing.db, { requestId: abandoned.requestId })).map((entry) => [entry.kind, entry.amountMicros])).toEqual([
      ["reserve", 3n * BETA_1K_MICROS],
      ["release", 3n * BETA_1K_MICROS],
    ]);
    await expectProjectionMatchesLedger(billing.db, accountId);
    // The hold that has not expired yet is untouched.
    expect((await billing.client.getCost({ requestId: live.requestId })).cost).toMatchObject({ status: CostStatus.PENDING });
    expect(await balanceOf(billing.client, otherAccountId)).toMatchObject({ heldMicros: BETA_1K_MICROS });

    // A second sweep finds nothing to do and changes nothing.
    const entriesBefore = await ledgerSize();
    const balancesBefore = [await balanceOf(billing.client, accountId), await balanceOf(billing.client, otherAccountId)];
    expect(await releaseExpiredHolds(billing.db, billing.logger)).toBe(0);
    expect(await ledgerSize()).toBe(entriesBefore);
    expect([await balanceOf(billing.client, accountId), await balanceOf(billing.client, otherAccountId)]).toEqual(balancesBefore);
    expect((await billing.client.getCost({ requestId: abandoned.requestId })).cost).toMatchObject({ status: CostStatus.NOT_CHARGED });
  });

  it("releases everything that is due across accounts, even more than one batch, and nothing held stays negative", async () => {
    const accounts = [await fundedAccount(billing.client, 1n * USD), await fundedAccount(billing.client, 1n * USD)];
    const due = [];
    for (let index = 0; index < 7; index += 1) {
      const ids = { requestId: uniqueId("req"), accountId: accounts[index % 2]!, keyId: uniqueId("key") };
      expect("hold" in (await reserve(billing.db, betaReserve(ids, 1 + (index % 3)), -60_000))).toBe(true);
      due.push(ids);
    }

    // Batches of 3: the sweeper is called until it reports nothing more to release.
    let released = 0;
    for (let round = 0; round < 10; round += 1) {
      const count = await releaseExpiredHolds(billing.db, billing.logger, 3);
      if (count === 0) break;
      released += count;
    }
    expect(released).toBe(due.length);

    for (const accountId of accounts) {
      expect(await balanceOf(billing.client, accountId)).toEqual({ balanceMicros: 1n * USD, heldMicros: 0n, availableMicros: 1n * USD });
      await expectProjectionMatchesLedger(billing.db, accountId);
    }
    for (const ids of due) {
      expect((await billing.client.getCost({ requestId: ids.requestId })).cost).toMatchObject({ status: CostStatus.NOT_CHARGED });
    }
  });
});
