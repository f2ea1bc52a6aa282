import { CostStatus, type CostRecord } from "@orvado/proto";
import { create } from "@bufbuild/protobuf";
import { CostRecordSchema } from "@orvado/proto";
import { tierFromName } from "@orvado/core";
import type { Queryable } from "@orvado/db";

interface CostRow {
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

/** pending while held; charged once anything was captured; not_charged otherwise. */
export function costStatus(row: Pick<CostRow, "settled_by" | "captured_micros">): CostStatus {
  if (row.captured_micros > 0n) return CostStatus.CHARGED;
  return row.settled_by === null ? CostStatus.PENDING : CostStatus.NOT_CHARGED;
}

export async function findCost(q: Queryable, requestId: string): Promise<CostRecord | null> {
  const result = await q.query<CostRow>(
    `SELECT request_id, model, size, tier, images_requested, images_delivered, unit_price_micros, captured_micros,
       settled_by, created_at, settled_at FROM billing.cost_records WHERE request_id = $1`,
    [requestId],
  );
  const row = result.rows[0];
  if (!row) return null;
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
  });
}
