import { prepareStatement, type Db } from "@orvado/db";

const SETTLE_REQUEST = prepareStatement("SELECT billing.settle_request($1, $2, $3, $4) AS result");

// Settling a hold, the second phase: capture what was delivered, release the rest.
// Every outcome is idempotent and order-tolerant, because events arrive at least
// once and possibly late: a `completed` after the hold expired still charges.

export type Settlement =
  | { kind: "completed"; imagesDelivered: number }
  | { kind: "failed"; reason: string }
  | { kind: "expired" };

export type SettleResult = "applied" | "duplicate" | "unknown_request";

/**
 * Settles one request: capture what was delivered (from its hold first), release
 * the rest. The steps run inside PostgreSQL as billing.settle_request (migration
 * 003) with the cost record locked: one round trip. Which settlements apply:
 * anything to an unsettled record; afterwards only a completed over an earlier
 * failed or expiry, since the images were delivered.
 */
export async function settle(db: Db, requestId: string, settlement: Settlement): Promise<SettleResult> {
  const delivered = settlement.kind === "completed" ? settlement.imagesDelivered : 0;
  const { rows } = await db.query<{ result: SettleResult }>(SETTLE_REQUEST, [
    requestId,
    settlement.kind,
    delivered,
    releaseReason(settlement),
  ]);
  return rows[0]!.result;
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
