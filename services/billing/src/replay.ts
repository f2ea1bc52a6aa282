import type { Queryable } from "@orvado/db";
import type { EntryKind } from "./ledger.ts";

// The balances table is a projection of the ledger. Folding an account's entries
// in ledger order with the rules settle.ts applies must give the same numbers;
// anything else means the projection drifted from the only record of money.

export interface RecomputedBalance {
  balanceMicros: bigint;
  heldMicros: bigint;
}

interface EntryRow {
  kind: EntryKind;
  request_id: string;
  amount_micros: bigint;
}

/**
 * top-up and adjustment move the balance; reserve holds; release frees the hold;
 * capture charges the balance and frees only what the request still had on hold
 * (nothing, when its hold had already expired or failed and been released).
 */
export async function recomputeFromLedger(q: Queryable, accountId: string): Promise<RecomputedBalance> {
  const { rows } = await q.query<EntryRow>(
    "SELECT kind, request_id, amount_micros FROM billing.ledger WHERE account_id = $1 ORDER BY entry_id",
    [accountId],
  );
  let balanceMicros = 0n;
  let heldMicros = 0n;
  const stillHeld = new Map<string, bigint>();
  const held = (requestId: string) => stillHeld.get(requestId) ?? 0n;
  for (const entry of rows) {
    const amount = entry.amount_micros;
    switch (entry.kind) {
      case "top_up":
      case "adjustment":
        balanceMicros += amount;
        break;
      case "reserve":
        heldMicros += amount;
        stillHeld.set(entry.request_id, held(entry.request_id) + amount);
        break;
      case "capture": {
        const fromHold = amount < held(entry.request_id) ? amount : held(entry.request_id);
        balanceMicros -= amount;
        heldMicros -= fromHold;
        stillHeld.set(entry.request_id, held(entry.request_id) - fromHold);
        break;
      }
      case "release":
        heldMicros -= amount;
        stillHeld.set(entry.request_id, held(entry.request_id) - amount);
        break;
    }
  }
  return { balanceMicros, heldMicros };
}
