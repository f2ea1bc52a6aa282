import type { Db } from "@orvado/db";
import { appendEntry, moveBalance, readBalance, type BalanceView } from "./ledger.ts";

/** The largest single top-up accepted: a typo guard, not a business rule. */
export const MAX_TOP_UP_MICROS = 1_000_000n * 1_000_000n;

/** Credits an account once per top-up id (a retried call changes nothing). */
export async function topUp(db: Db, input: { accountId: string; amountMicros: bigint; note: string; topUpId: string }): Promise<BalanceView> {
  return db.tx(async (q) => {
    const appended = await appendEntry(q, {
      kind: "top_up",
      accountId: input.accountId,
      keyId: null,
      requestId: input.topUpId,
      amountMicros: input.amountMicros,
      reason: input.note,
    });
    if (appended) await moveBalance(q, input.accountId, input.amountMicros, 0n);
    return readBalance(q, input.accountId);
  });
}

/**
 * A signed correction (refund, credit, fix) applied once per adjustment id. A
 * debit may take the balance below zero: it records a debt the operator decided on.
 */
export async function adjust(db: Db, input: { accountId: string; amountMicros: bigint; note: string; adjustmentId: string }): Promise<BalanceView> {
  return db.tx(async (q) => {
    const appended = await appendEntry(q, {
      kind: "adjustment",
      accountId: input.accountId,
      keyId: null,
      requestId: input.adjustmentId,
      amountMicros: input.amountMicros,
      reason: input.note,
    });
    if (appended) await moveBalance(q, input.accountId, input.amountMicros, 0n);
    return readBalance(q, input.accountId);
  });
}
