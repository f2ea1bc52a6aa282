import type { Queryable } from "@orvado/db";
import type { EntryKind } from "./ledger.ts";
import { emptyFold, foldEntry } from "./ledger-fold.ts";

// An account statement: every ledger entry in a period with the balance and the
// amount held after it, computed by folding the ledger from its first entry, so
// the opening balance of a period is exact whatever came before it.

export interface StatementLine {
  entryId: bigint;
  kind: EntryKind;
  requestId: string;
  keyId: string;
  /** As recorded (positive but for adjustments); the balance and held columns show its effect. */
  amountMicros: bigint;
  balanceAfterMicros: bigint;
  heldAfterMicros: bigint;
  reason: string;
  createdAt: Date;
}

export interface Statement {
  accountId: string;
  openingBalanceMicros: bigint;
  openingHeldMicros: bigint;
  entries: StatementLine[];
  closingBalanceMicros: bigint;
  closingHeldMicros: bigint;
}

interface Row {
  entry_id: bigint;
  kind: EntryKind;
  request_id: string;
  key_id: string | null;
  amount_micros: bigint;
  reason: string;
  created_at: Date;
}

/** Entries created at or after `from` and before `to` are listed; earlier ones make up the opening balance. */
export async function accountStatement(q: Queryable, accountId: string, period: { from?: Date; to?: Date } = {}): Promise<Statement> {
  const { rows } = await q.query<Row>(
    `SELECT entry_id, kind, request_id, key_id, amount_micros, reason, created_at FROM billing.ledger
     WHERE account_id = $1 AND ($2::timestamptz IS NULL OR created_at < $2) ORDER BY entry_id`,
    [accountId, period.to ?? null],
  );
  const state = emptyFold();
  let opening: { balance: bigint; held: bigint } | null = null;
  const entries: StatementLine[] = [];
  for (const row of rows) {
    const inPeriod = !period.from || row.created_at >= period.from;
    if (inPeriod && !opening) opening = { balance: state.balanceMicros, held: state.heldMicros };
    foldEntry(state, row);
    if (!inPeriod) continue;
    entries.push({
      entryId: row.entry_id,
      kind: row.kind,
      requestId: row.request_id,
      keyId: row.key_id ?? "",
      amountMicros: row.amount_micros,
      balanceAfterMicros: state.balanceMicros,
      heldAfterMicros: state.heldMicros,
      reason: row.reason,
      createdAt: row.created_at,
    });
  }
  opening ??= { balance: state.balanceMicros, held: state.heldMicros };
  return {
    accountId,
    openingBalanceMicros: opening.balance,
    openingHeldMicros: opening.held,
    entries,
    closingBalanceMicros: state.balanceMicros,
    closingHeldMicros: state.heldMicros,
  };
}
