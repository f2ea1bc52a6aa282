import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BETA_1K_MICROS, USD, completedEvent, deliver, failedEvent, fundedAccount, heldRequest, startTestBilling, uniqueId, type TestBilling } from "./test-support.ts";

// Issue B §8: a statement lists every entry of an account with a running balance.

let billing: TestBilling;
beforeAll(async () => {
  billing = await startTestBilling();
});
afterAll(async () => {
  await billing?.close();
});

describe("GetStatement", () => {
  it("lists every entry in order with the balance and hold after it", async () => {
    const accountId = await fundedAccount(billing.client, 1n * USD);
    const charged = await heldRequest(billing.client, accountId, 2);
    const failed = await heldRequest(billing.client, accountId, 1);
    await deliver(billing, [completedEvent(charged, 1), failedEvent(failed)]);
    await billing.client.topUp({ accountId, amountMicros: 2n * USD, note: "invoice 42", topUpId: uniqueId("topup") });

    const statement = await billing.client.getStatement({ accountId });
    const lines = statement.entries.map((entry) => [entry.kind, entry.amountMicros, entry.balanceAfterMicros, entry.heldAfterMicros]);
    const P = BETA_1K_MICROS;
    expect(lines).toEqual([
      ["top_up", USD, USD, 0n],
      ["reserve", 2n * P, USD, 2n * P],
      ["reserve", P, USD, 3n * P],
      ["capture", P, USD - P, 2n * P],
      ["release", P, USD - P, P],
      ["release", P, USD - P, 0n],
      ["top_up", 2n * USD, 3n * USD - P, 0n],
    ]);
    expect(statement.entries.at(-1)!.reason).toBe("invoice 42");
    expect(statement.openingBalanceMicros).toBe(0n);
    expect(statement.closingBalanceMicros).toBe(3n * USD - P);
    expect((await billing.client.getBalance({ accountId })).balance!.balanceMicros).toBe(statement.closingBalanceMicros);
  });

  it("opens a period with the balance of everything before it", async () => {
    const accountId = await fundedAccount(billing.client, 5n * USD);
    await new Promise((resolve) => setTimeout(resolve, 20));
    const from = BigInt(Date.now());
    await new Promise((resolve) => setTimeout(resolve, 20));
    await billing.client.topUp({ accountId, amountMicros: USD, note: "second", topUpId: uniqueId("topup") });
    const statement = await billing.client.getStatement({ accountId, fromUnixMs: from });
    expect(statement.openingBalanceMicros).toBe(5n * USD);
    expect(statement.entries.map((entry) => entry.reason)).toEqual(["second"]);
    expect(statement.closingBalanceMicros).toBe(6n * USD);
    const before = await billing.client.getStatement({ accountId, toUnixMs: from });
    expect(before.entries).toHaveLength(1);
    expect(before.closingBalanceMicros).toBe(5n * USD);
  });

  it("is empty for an account with no entries", async () => {
    const statement = await billing.client.getStatement({ accountId: uniqueId("acct") });
    expect(statement.entries).toEqual([]);
    expect(statement.closingBalanceMicros).toBe(0n);
  });
});

describe("Adjust", () => {
  it("credits or debits with a note, once per adjustment id, and replays equal", async () => {
    const accountId = await fundedAccount(billing.client, 1n * USD);
    const refundId = uniqueId("adj");
    for (let attempt = 0; attempt < 2; attempt++) {
      await billing.client.adjust({ accountId, amountMicros: 250_000n, note: "refund for a bad image", adjustmentId: refundId });
    }
    await billing.client.adjust({ accountId, amountMicros: -2n * USD, note: "chargeback", adjustmentId: uniqueId("adj") });
    const statement = await billing.client.getStatement({ accountId });
    expect(statement.entries.map((entry) => [entry.kind, entry.amountMicros, entry.balanceAfterMicros, entry.reason])).toEqual([
      ["top_up", USD, USD, "test funds"],
      ["adjustment", 250_000n, 1_250_000n, "refund for a bad image"],
      ["adjustment", -2n * USD, -750_000n, "chargeback"],
    ]);
    // A negative balance refuses new work rather than going further down.
    const { balance } = await billing.client.getBalance({ accountId });
    expect(balance!.availableMicros).toBe(-750_000n);
    expect((await billing.client.replayLedger({})).differences).toEqual([]);
  });

  it("refuses a zero amount or a missing note", async () => {
    const accountId = await fundedAccount(billing.client, USD);
    await expect(billing.client.adjust({ accountId, amountMicros: 0n, note: "x" })).rejects.toThrow(/non-zero/);
    await expect(billing.client.adjust({ accountId, amountMicros: 5n, note: "  " })).rejects.toThrow(/note is required/);
  });
});
