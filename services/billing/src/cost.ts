import { CostStatus, type CostRecord } from "@orvado/proto";
import { create } from "@bufbuild/protobuf";
import { CostRecordSchema } from "@orvado/proto";
import { tierFromName } from "@orvado/core";
import type { Queryable } from "@orvado/db";

export interface CostRow {
  request_id: string;
  model: string;
  size: string;
  tier: string;
  images_requested: number;
  images_delivered: number;
  unit_price_micros: bigint;
  captured_micros: bigint;
  settled_by: string | null;
  created_at: Date;
  settled_at: Date | null;
}

const COST_COLUMN_NAMES = ["request_id", "model", "size", "tier", "images_requested", "images_delivered", "unit_price_micros",
  "captured_micros", "settled_by", "created_at", "settled_at"];

/** The columns of billing.cost_records that make a CostRow, under a table alias (it is read joined). */
export const costColumnsOf = (alias: string) => COST_COLUMN_NAMES.map((name) => `${alias}.${name}`).join(", ");

/** pending while held; charged once anything was captured; not_charged otherwise. */
export function costStatus(row: Pick<CostRow, "settled_by" | "captured_micros">): CostStatus {
  if (row.captured_micros > 0n) return CostStatus.CHARGED;
  return row.settled_by === null ? CostStatus.PENDING : CostStatus.NOT_CHARGED;
}

/** The key id and end user are filled only for the account owner's views; the public lookup leaves them empty. */
export function costFromRow(row: CostRow, keyId = "", user = ""): CostRecord {
  return create(CostRecordSchema, {
    requestId: row.request_id,
    status: costStatus(row),
    model: row.model,
    size: row.size,
    tier: tierFromName(row.tier) ?? undefined,
    imagesRequested: row.images_requested,
    imagesDelivered: row.images_delivered,
    unitPriceMicros: row.unit_price_micros,
    amountMicros: row.captured_micros,
    createdAtUnixMs: BigInt(new Date(row.created_at).getTime()),
    settledAtUnixMs: row.settled_at ? BigInt(new Date(row.settled_at).getTime()) : undefined,
    keyId,
    user,
  });
}

/** With an account id, another account's request is not found, exactly as an unknown one. */
export async function findCost(q: Queryable, requestId: string, ownerAccountId?: string): Promise<CostRecord | null> {
  const result = await q.query<CostRow & { key_id: string; end_user: string | null }>(
    `SELECT ${costColumnsOf("c")}, c.key_id, u.end_user FROM billing.cost_records c
     LEFT JOIN billing.request_end_users u ON u.request_id = c.request_id
     WHERE c.request_id = $1 AND ($2::text IS NULL OR c.account_id = $2)`,
    [requestId, ownerAccountId ?? null],
  );
  const row = result.rows[0];
  if (!row) return null;
  return ownerAccountId ? costFromRow(row, row.key_id, row.end_user ?? "") : costFromRow(row);
}
