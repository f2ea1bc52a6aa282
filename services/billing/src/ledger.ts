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

/** Moves an account's balance and held amounts by the given deltas (billing.move_balance, sql/functions/move_balance.sql). */
export async function moveBalance(q: Queryable, accountId: string, balanceDelta: bigint, heldDelta: bigint): Promise<void> {
  await q.query("SELECT billing.move_balance($1, $2, $3)", [accountId, balanceDelta, heldDelta]);
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
