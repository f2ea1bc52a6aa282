import { prepareStatement, type Db } from "@orvado/db";

const SETTLE_REQUEST = prepareStatement("SELECT billing.settle_request($1, $2, $3, $4) AS result");
const SETTLE_REQUESTS = prepareStatement("SELECT item, result FROM billing.settle_requests($1::text[], $2::text[], $3::text[], $4::int[], $5::text[])");

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
 * the rest. The steps run inside PostgreSQL as billing.settle_request
 * (sql/functions/settle_request.sql) with the cost record locked: one round trip. Which settlements apply:
 * anything to an unsettled record; afterwards only a completed over an earlier
 * failed or expiry, since the images were delivered.
 */
export async function settle(db: Db, requestId: string, settlement: Settlement): Promise<SettleResult> {
  const { rows } = await db.query<{ result: SettleResult }>(SETTLE_REQUEST, [requestId, settlement.kind, delivered(settlement), releaseReason(settlement)]);
  return rows[0]!.result;
}

export interface RequestSettlement {
  requestId: string;
  /** The account the event names: it only orders the batch (sql/functions/settle_requests.sql); what is charged comes from the cost record. */
  accountId: string;
  settlement: Settlement;
}

/**
 * Settles many requests in one statement and one commit (billing.settle_requests,
 * sql/functions/settle_requests.sql): billing.settle_request for each, as settle() runs it, taken in account order; several
 * for one request apply in the order given. Results come back in the order given.
 * If any one fails, none is applied and this throws.
 */
export async function settleBatch(db: Db, items: RequestSettlement[]): Promise<SettleResult[]> {
  if (items.length === 0) return [];
  const { rows } = await db.query<{ item: number; result: SettleResult }>(SETTLE_REQUESTS, [
    items.map((item) => item.requestId),
    items.map((item) => item.accountId),
    items.map((item) => item.settlement.kind),
    items.map((item) => delivered(item.settlement)),
    items.map((item) => releaseReason(item.settlement)),
  ]);
  const results = new Array<SettleResult>(items.length);
  for (const row of rows) results[row.item - 1] = row.result;
  return results;
}

function delivered(settlement: Settlement): number {
  return settlement.kind === "completed" ? settlement.imagesDelivered : 0;
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
