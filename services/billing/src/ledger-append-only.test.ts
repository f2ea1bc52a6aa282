import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BETA_1K_MICROS, USD, betaReserve, fundedAccount, ledgerOf, startTestBilling, uniqueId, type TestBilling } from "./test-support.ts";

// The ledger is the only record of money: the database itself refuses to change
// or remove an entry, whoever asks (not only billing's own code).

let billing: TestBilling;
let accountId: string;

beforeAll(async () => {
  billing = await startTestBilling();
  accountId = await fundedAccount(billing.client, 1n * USD);
  const reserved = await billing.client.reserve(betaReserve({ requestId: uniqueId("req"), accountId, keyId: uniqueId("key") }));
  expect(reserved.result.case).toBe("hold");
});
afterAll(async () => {
  await billing?.close();
});

describe("the ledger is append-only", () => {
  it("has entries to protect", async () => {
    const entries = await ledgerOf(billing.db, { accountId });
    expect(entries.map((entry) => [entry.kind, entry.amountMicros])).toEqual([
      ["top_up", 1n * USD],
      ["reserve", BETA_1K_MICROS],
    ]);
  });

  it("refuses UPDATE", async () => {
    await expect(billing.db.query("UPDATE billing.ledger SET amount_micros = 0 WHERE account_id = $1", [accountId])).rejects.toThrow(
      /billing\.ledger is append-only: UPDATE is not allowed/,
    );
    await expect(billing.db.query("UPDATE billing.ledger SET reason = 'edited'")).rejects.toThrow(/append-only: UPDATE/);
  });

  it("refuses DELETE", async () => {
    await expect(billing.db.query("DELETE FROM billing.ledger WHERE account_id = $1", [accountId])).rejects.toThrow(
      /billing\.ledger is append-only: DELETE is not allowed/,
    );
    await expect(billing.db.query("DELETE FROM billing.ledger")).rejects.toThrow(/append-only: DELETE/);
  });

  it("refuses TRUNCATE", async () => {
    await expect(billing.db.query("TRUNCATE billing.ledger")).rejects.toThrow(/billing\.ledger is append-only: TRUNCATE is not allowed/);
  });

  it("refuses them inside a transaction too, rolling the whole transaction back", async () => {
    const before = await billing.db.query<{ n: bigint }>("SELECT count(*) AS n FROM billing.ledger");
    await expect(
      billing.db.tx(async (q) => {
        await q.query(
          "INSERT INTO billing.ledger (kind, account_id, request_id, amount_micros, reason) VALUES ('adjustment', $1, $2, 5, 'x')",
          [accountId, uniqueId("adj")],
        );
        await q.query("DELETE FROM billing.ledger WHERE account_id = $1", [accountId]);
      }),
    ).rejects.toThrow(/append-only: DELETE/);
    const after = await billing.db.query<{ n: bigint }>("SELECT count(*) AS n FROM billing.ledger");
    expect(after.rows[0]!.n).toBe(before.rows[0]!.n);
  });

  it("still has every entry, unchanged, after the refused attempts", async () => {
    const entries = await ledgerOf(billing.db, { accountId });
    expect(entries.map((entry) => [entry.kind, entry.amountMicros])).toEqual([
      ["top_up", 1n * USD],
      ["reserve", BETA_1K_MICROS],
    ]);
  });
});
