import type { Queryable } from "@orvado/db";

// Appending to the ledger and moving the projections always happen together,
// inside the caller's transaction: these are the only writes that touch money.

export type EntryKind = "top_up" | "reserve" | "capture" | "release" | "adjustment";

export interface LedgerEntry {
  kind: EntryKind;
  accountId: string;
  keyId: string | null;
  requestId: string;
  amountMicros: bigint;
  reason: string;
}

/** Appends one entry; false if this (request, kind) is already in the ledger. */
export async function appendEntry(q: Queryable, entry: LedgerEntry): Promise<boolean> {
  const inserted = await q.query(
    `INSERT INTO billing.ledger (kind, account_id, key_id, request_id, amount_micros, reason)
     VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (request_id, kind) DO NOTHING RETURNING entry_id`,
    [entry.kind, entry.accountId, entry.keyId, entry.requestId, entry.amountMicros, entry.reason],
  );
  return inserted.rowCount === 1;
}

/**
 * Moves an account's balance and held amounts by the given deltas. UPDATE first:
 * an INSERT … ON CONFLICT would check the CHECK constraints against the proposed
 * row (negative deltas) before it ever reached the conflict.
 */
export async function moveBalance(q: Queryable, accountId: string, balanceDelta: bigint, heldDelta: bigint): Promise<void> {
  const updated = await q.query(
    "UPDATE billing.balances SET balance_micros = balance_micros + $2, held_micros = held_micros + $3 WHERE account_id = $1",
    [accountId, balanceDelta, heldDelta],
  );
  if (updated.rowCount > 0) return;
  await q.query(
    `INSERT INTO billing.balances (account_id, balance_micros, held_micros) VALUES ($1, $2, $3)
     ON CONFLICT (account_id) DO UPDATE SET balance_micros = billing.balances.balance_micros + $2,
       held_micros = billing.balances.held_micros + $3`,
    [accountId, balanceDelta, heldDelta],
  );
}

/** Moves what a key has spent (captured) and has on hold; UPDATE first, as above. */
export async function moveKeySpend(q: Queryable, keyId: string, accountId: string, capturedDelta: bigint, heldDelta: bigint): Promise<void> {
  const updated = await q.query(
    "UPDATE billing.key_spend SET captured_micros = captured_micros + $2, held_micros = held_micros + $3 WHERE key_id = $1",
    [keyId, capturedDelta, heldDelta],
  );
  if (updated.rowCount > 0) return;
  await q.query(
    `INSERT INTO billing.key_spend (key_id, account_id, captured_micros, held_micros) VALUES ($1, $2, $3, $4)
     ON CONFLICT (key_id) DO UPDATE SET captured_micros = billing.key_spend.captured_micros + $3,
       held_micros = billing.key_spend.held_micros + $4`,
    [keyId, accountId, capturedDelta, heldDelta],
  );
}

export interface BalanceView {
  accountId: string;
  balanceMicros: bigint;
  heldMicros: bigint;
  availableMicros: bigint;
}

export async function readBalance(q: Queryable, accountId: string, forUpdate = false): Promise<BalanceView> {
  const result = await q.query<{ balance_micros: bigint; held_micros: bigint }>(
    `SELECT balance_micros, held_micros FROM billing.balances WHERE account_id = $1${forUpdate ? " FOR UPDATE" : ""}`,
    [accountId],
  );
  const row = result.rows[0] ?? { balance_micros: 0n, held_micros: 0n };
  return {
    accountId,
    balanceMicros: row.balance_micros,
    heldMicros: row.held_micros,
    availableMicros: row.balance_micros - row.held_micros,
  };
}
