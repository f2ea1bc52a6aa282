import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { playgroundKeyId } from "@orvado/core";
import { replayLedger } from "./replay.ts";
import { startTestBilling, type TestBilling } from "./test-support.ts";

// Migration 009 on real SQL (PostgreSQL with TEST_DATABASE_URL, else PGlite): rows
// written when every account's playground shared the key id "console" are split
// into one key_spend row per account, and a replay of the untouched ledger agrees.

const MIGRATION = readFileSync(new URL("../migrations/009_playground_key_per_account.sql", import.meta.url), "utf8");

let billing: TestBilling;

beforeAll(async () => {
  billing = await startTestBilling();
});
afterAll(async () => {
  await billing?.close();
});

describe("migration 009: a playground key per account", () => {
  it("splits the shared 'console' spend by account, moves the cost records, and replay finds no difference", async () => {
    const q = billing.db;
    // As the old code left them: A captured $0.02, B holds $0.04, both under 'console', the row named after A.
    await q.query(
      `INSERT INTO billing.ledger (kind, account_id, key_id, request_id, amount_micros, reason) VALUES
         ('reserve', 'acct_mig_a', 'console', 'req_mig_a', 20000, 'reserve'),
         ('capture', 'acct_mig_a', 'console', 'req_mig_a', 20000, 'capture'),
         ('reserve', 'acct_mig_b', 'console', 'req_mig_b', 40000, 'reserve')`,
    );
    await q.query(
      `INSERT INTO billing.cost_records (request_id, account_id, key_id, model, size, tier, images_requested, unit_price_micros,
         reserved_micros, images_delivered, captured_micros, settled_by, settled_at, hold_expires_at) VALUES
         ('req_mig_a', 'acct_mig_a', 'console', 'beta', '1024x1024', '1K', 1, 20000, 20000, 1, 20000, 'completed', now(), now() + interval '1 hour'),
         ('req_mig_b', 'acct_mig_b', 'console', 'beta', '1024x1024', '1K', 2, 20000, 40000, 0, 0, NULL, NULL, now() + interval '1 hour')`,
    );
    await q.query("INSERT INTO billing.key_spend (key_id, account_id, captured_micros, held_micros) VALUES ('console', 'acct_mig_a', 20000, 40000)");

    await q.query(MIGRATION);

    const { rows } = await q.query<{ key_id: string; account_id: string; captured_micros: bigint; held_micros: bigint }>(
      "SELECT key_id, account_id, captured_micros, held_micros FROM billing.key_spend WHERE account_id LIKE 'acct_mig_%' ORDER BY key_id",
    );
    expect(rows.map((row) => ({ ...row, captured_micros: BigInt(row.captured_micros), held_micros: BigInt(row.held_micros) }))).toEqual([
      { key_id: playgroundKeyId("acct_mig_a"), account_id: "acct_mig_a", captured_micros: 20000n, held_micros: 0n },
      { key_id: playgroundKeyId("acct_mig_b"), account_id: "acct_mig_b", captured_micros: 0n, held_micros: 40000n },
    ]);
    const records = await q.query<{ request_id: string; key_id: string }>("SELECT request_id, key_id FROM billing.cost_records WHERE request_id LIKE 'req_mig_%' ORDER BY request_id");
    expect(records.rows.map((row) => row.key_id)).toEqual([playgroundKeyId("acct_mig_a"), playgroundKeyId("acct_mig_b")]);

    // The balances of these hand-made accounts were not written; key spend and cost records must agree.
    const report = await replayLedger(q);
    expect(report.differences.filter((difference) => difference.projection !== "balance")).toEqual([]);
  });
});
