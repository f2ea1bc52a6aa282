import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Tier } from "@orvado/proto";
import { Code, ConnectError } from "@orvado/rpc";
import { seedPrices, listPrices } from "./prices.ts";
import { BETA_1K_MICROS, USD, betaReserve, completedEvent, deliver, fundedAccount, startTestBilling, uniqueId, type TestBilling } from "./test-support.ts";

// Issue B §7: operators change prices; a change applies to new requests only and is itself recorded.

let billing: TestBilling;
beforeAll(async () => {
  billing = await startTestBilling();
});
afterAll(async () => {
  await billing?.close();
});

const betaPrice = async () => (await billing.client.listPrices({})).prices.find((p) => p.model === "beta" && p.tier === Tier.TIER_1K)!.priceMicros;

describe("price table", () => {
  it("is seeded from the file with each price recorded as a change", async () => {
    expect(await betaPrice()).toBe(BETA_1K_MICROS);
    const { changes } = await billing.client.listPriceChanges({ model: "beta" });
    expect(changes.some((c) => c.tier === Tier.TIER_1K && c.actor === "prices file" && c.oldPriceMicros === undefined)).toBe(true);
  });

  it("applies a change to new reservations only; a held request keeps its price", async () => {
    const accountId = await fundedAccount(billing.client, 10n * USD);
    const before = { requestId: uniqueId("req"), accountId, keyId: uniqueId("key") };
    expect((await billing.client.reserve(betaReserve(before))).result.case).toBe("hold");

    const { change } = await billing.client.setPrice({ model: "beta", tier: Tier.TIER_1K, priceMicros: 50_000n, actor: "ops@example.com", note: "new pricing" });
    expect(change).toMatchObject({ model: "beta", oldPriceMicros: BETA_1K_MICROS, newPriceMicros: 50_000n, actor: "ops@example.com", note: "new pricing" });

    const after = { requestId: uniqueId("req"), accountId, keyId: before.keyId };
    const hold = await billing.client.reserve(betaReserve(after));
    expect(hold.result.case === "hold" && hold.result.value.unitPriceMicros).toBe(50_000n);
    await deliver(billing, [completedEvent(before, 1), completedEvent(after, 1)]);
    expect((await billing.client.getCost({ requestId: before.requestId })).cost!.amountMicros).toBe(BETA_1K_MICROS);
    expect((await billing.client.getCost({ requestId: after.requestId })).cost!.amountMicros).toBe(50_000n);
    expect((await billing.client.getBalance({ accountId })).balance!.balanceMicros).toBe(10n * USD - BETA_1K_MICROS - 50_000n);
  });

  it("keeps an operator's price when billing restarts and seeds the file again", async () => {
    await billing.client.setPrice({ model: "beta", tier: Tier.TIER_2K, priceMicros: 77_000n, actor: "ops", note: "" });
    const added = await seedPrices(billing.db, [{ model: "beta", tier: "2K", priceMicros: 1n }, { model: "new-model", tier: "1K", priceMicros: 5n }], "prices.json");
    expect(added).toBe(1);
    const prices = await listPrices(billing.db);
    expect(prices.find((p) => p.model === "beta" && p.tier === "2K")!.priceMicros).toBe(77_000n);
    expect(prices.find((p) => p.model === "new-model")!.priceMicros).toBe(5n);
  });

  it("records nothing when the price is set to what it already is", async () => {
    const price = await betaPrice();
    const { change } = await billing.client.setPrice({ model: "beta", tier: Tier.TIER_1K, priceMicros: price, actor: "ops", note: "" });
    expect(change).toBeUndefined();
  });

  it("refuses bad changes", async () => {
    const bad = [
      { model: "", tier: Tier.TIER_1K, priceMicros: 1n, actor: "ops" },
      { model: "beta", tier: Tier.TIER_UNSPECIFIED, priceMicros: 1n, actor: "ops" },
      { model: "beta", tier: Tier.TIER_1K, priceMicros: -1n, actor: "ops" },
      { model: "beta", tier: Tier.TIER_1K, priceMicros: 1001n * USD, actor: "ops" },
      { model: "beta", tier: Tier.TIER_1K, priceMicros: 1n, actor: "" },
      { model: "beta; drop", tier: Tier.TIER_1K, priceMicros: 1n, actor: "ops" },
    ];
    for (const request of bad) {
      await expect(billing.client.setPrice({ ...request, note: "" })).rejects.toSatisfy(
        (error) => error instanceof ConnectError && error.code === Code.InvalidArgument,
      );
    }
  });

  it("refuses unknown models and tiers, and a price of 0 unless it is marked free, with a clear message", async () => {
    const refusal = async (request: { model: string; tier: Tier; priceMicros: bigint; free?: boolean }) => {
      const error = await billing.client.setPrice({ ...request, actor: "ops", note: "" }).then(
        () => null,
        (thrown: unknown) => thrown,
      );
      expect(error).toBeInstanceOf(ConnectError);
      expect((error as ConnectError).code).toBe(Code.InvalidArgument);
      return (error as ConnectError).rawMessage;
    };
    expect(await refusal({ model: "bta", tier: Tier.TIER_1K, priceMicros: 1n })).toMatch(/Unknown model "bta"/);
    expect(await refusal({ model: "beta", tier: Tier.TIER_4K, priceMicros: 1n })).toMatch(/beta has no 4K tier; its tiers are 1K, 2K/);
    expect(await refusal({ model: "beta", tier: Tier.TIER_1K, priceMicros: 0n })).toMatch(/price of 0 makes the model free/);
    expect(await refusal({ model: "beta", tier: Tier.TIER_1K, priceMicros: 5n, free: true })).toMatch(/free is only for a price of 0/);
    expect((await listPrices(billing.db)).filter((p) => p.model === "bta" || (p.model === "beta" && p.tier === "4K"))).toEqual([]);

    const { price } = await billing.client.setPrice({ model: "beta-2-lite", tier: Tier.TIER_1K, priceMicros: 0n, free: true, actor: "ops", note: "promo" });
    expect(price?.priceMicros).toBe(0n);
  });

  it("keeps the change history append-only in the database itself", async () => {
    await expect(billing.db.query("UPDATE billing.price_changes SET note = 'x'")).rejects.toThrow(/append-only/);
    await expect(billing.db.query("DELETE FROM billing.price_changes")).rejects.toThrow(/append-only/);
    await expect(billing.db.query("TRUNCATE billing.price_changes")).rejects.toThrow(/append-only/);
  });
});
