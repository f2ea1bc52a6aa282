import type { Db, Queryable } from "@orvado/db";
import { appendEntry, moveBalance, moveKeySpend } from "./ledger.ts";

// Settling a hold, the second phase: capture what was delivered, release the rest.
// Every outcome is idempotent and order-tolerant, because events arrive at least
// once and possibly late: a `completed` after the hold expired still charges.

export type Settlement =
  | { kind: "completed"; imagesDelivered: number }
  | { kind: "failed"; reason: string }
  | { kind: "expired" };

export type SettleResult = "applied" | "duplicate" | "unknown_request";

interface OpenRecord {
  account_id: string;
  key_id: string;
  images_requested: number;
  unit_price_micros: bigint;
  reserved_micros: bigint;
  captured_micros: bigint;
  released_micros: bigint;
  settled_by: "completed" | "failed" | "expired" | null;
}

/**
 * Which settlements may still change a record settled by `current`. A completed
 * always wins over an earlier expiry or failed (the images were delivered), so
 * the outcome never depends on the order the events arrive in.
 */
function mayApply(current: OpenRecord["settled_by"], next: Settlement["kind"]): boolean {
  if (current === null) return true;
  return current !== "completed" && next === "completed";
}

export async function settle(db: Db, requestId: string, settlement: Settlement): Promise<SettleResult> {
  return db.tx(async (q) => {
    const result = await q.query<OpenRecord>(
      `SELECT account_id, key_id, images_requested, unit_price_micros, reserved_micros, captured_micros,
         released_micros, settled_by FROM billing.cost_records WHERE request_id = $1 FOR UPDATE`,
      [requestId],
    );
    const record = result.rows[0];
    if (!record) return "unknown_request";
    if (!mayApply(record.settled_by, settlement.kind)) return "duplicate";
    const delivered = settlement.kind === "completed" ? Math.min(settlement.imagesDelivered, record.images_requested) : 0;
    await applySettlement(q, requestId, record, settlement, delivered);
    return "applied";
  });
}

async function applySettlement(q: Queryable, requestId: string, record: OpenRecord, settlement: Settlement, delivered: number) {
  const ids = { accountId: record.account_id, keyId: record.key_id, requestId };
  const stillHeld = record.reserved_micros - record.captured_micros - record.released_micros;
  const captureMicros = record.unit_price_micros * BigInt(delivered);
  const fromHold = captureMicros < stillHeld ? captureMicros : stillHeld;
  const releaseMicros = stillHeld - fromHold;
  if (captureMicros > 0n) {
    await appendEntry(q, { ...ids, kind: "capture", amountMicros: captureMicros, reason: `${delivered} image(s) delivered` });
  }
  if (releaseMicros > 0n) {
    await appendEntry(q, { ...ids, kind: "release", amountMicros: releaseMicros, reason: releaseReason(settlement) });
  }
  await moveBalance(q, record.account_id, -captureMicros, -(fromHold + releaseMicros));
  await moveKeySpend(q, record.key_id, record.account_id, captureMicros, -(fromHold + releaseMicros));
  await q.query(
    `UPDATE billing.cost_records SET settled_by = $2, settled_at = now(), images_delivered = $3,
       captured_micros = captured_micros + $4, released_micros = released_micros + $5 WHERE request_id = $1`,
    [requestId, settlement.kind, delivered, captureMicros, releaseMicros],
  );
}

function releaseReason(settlement: Settlement): string {
  switch (settlement.kind) {
    case "completed":
      return "images not delivered";
    case "failed":
      return `failed: ${settlement.reason}`.slice(0, 500);
    case "expired":
      return "hold expired unsettled";
  }
}
