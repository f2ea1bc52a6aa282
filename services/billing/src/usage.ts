import type { CostRecord } from "@orvado/proto";
import type { Queryable } from "@orvado/db";
import { isSupportedTimestamp } from "@orvado/core";
import { costColumnsOf, costFromRow, type CostRow } from "./cost.ts";

// What an account owner sees of their own requests: pages of cost records,
// spend per day, and what each key has spent. Always scoped by account id.

export interface UsageFilter {
  accountId: string;
  keyId?: string;
  model?: string;
  /** The end-user id (OpenAI's `user`) the request carried. */
  user?: string;
  from?: Date;
  to?: Date;
  limit: number;
  cursor?: string;
}

/**
 * A page boundary: the created_at and request id of the last row shown. The time is
 * PostgreSQL's own text, to the microsecond: cut to a JavaScript Date's millisecond, a row
 * created in the same millisecond just before the boundary fell between two pages.
 */
export function encodeCursor(createdAt: string, requestId: string): string {
  return Buffer.from(`${createdAt}|${requestId}`).toString("base64url");
}

/** Null for anything encodeCursor could not have made, such as a time PostgreSQL cannot hold. */
export function decodeCursor(cursor: string): { createdAt: string; requestId: string } | null {
  const [iso, requestId, ...rest] = Buffer.from(cursor, "base64url").toString("utf8").split("|");
  if (rest.length > 0 || !requestId || !iso || !CURSOR_TIME.test(iso) || !isSupportedTimestamp(new Date(iso).getTime())) return null;
  return { createdAt: iso, requestId };
}

/** The cursor's time as the query below writes it (UTC, microseconds). */
const CURSOR_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

export async function listCostRecords(q: Queryable, filter: UsageFilter): Promise<{ records: CostRecord[]; nextCursor: string }> {
  const after = filter.cursor ? decodeCursor(filter.cursor) : null;
  // The end user's row is the request's own (same id, same account): a left join adds no rows.
  const { rows } = await q.query<CostRow & { key_id: string; end_user: string | null; cursor_time: string }>(
    `SELECT ${costColumnsOf("c")}, c.key_id, u.end_user,
            to_char(c.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS cursor_time
       FROM billing.cost_records c
     LEFT JOIN billing.request_end_users u ON u.request_id = c.request_id
     WHERE c.account_id = $1
       AND ($2::text IS NULL OR c.key_id = $2)
       AND ($3::text IS NULL OR c.model = $3)
       AND ($4::timestamptz IS NULL OR c.created_at >= $4)
       AND ($5::timestamptz IS NULL OR c.created_at < $5)
       AND ($6::timestamptz IS NULL OR (c.created_at, c.request_id) < ($6, $7))
       AND ($9::text IS NULL OR u.end_user = $9)
     ORDER BY c.created_at DESC, c.request_id DESC LIMIT $8`,
    [filter.accountId, filter.keyId ?? null, filter.model ?? null, filter.from ?? null, filter.to ?? null,
      after?.createdAt ?? null, after?.requestId ?? "", filter.limit + 1, filter.user ?? null],
  );
  const page = rows.slice(0, filter.limit);
  const last = page[page.length - 1];
  return {
    records: page.map((row) => costFromRow(row, row.key_id, row.end_user ?? "")),
    nextCursor: rows.length > filter.limit && last ? encodeCursor(last.cursor_time, last.request_id) : "",
  };
}

export interface DaySpend {
  date: string;
  amountMicros: bigint;
  /** Charged requests only (costStatus: something was captured). */
  requests: number;
  notCharged: number;
  pending: number;
}

/** The UTC days of a window ending today, oldest first. */
export function windowDays(days: number, now = new Date()): string[] {
  const today = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  return Array.from({ length: days }, (_, index) => new Date(today - (days - 1 - index) * 86_400_000).toISOString().slice(0, 10));
}

/** How a cost record's outcome is counted in SQL; the same rule as costStatus in cost.ts. */
export const OUTCOME_COUNTS = `count(*) FILTER (WHERE captured_micros > 0)::bigint AS charged,
  count(*) FILTER (WHERE captured_micros = 0 AND settled_by IS NOT NULL)::bigint AS not_charged,
  count(*) FILTER (WHERE captured_micros = 0 AND settled_by IS NULL)::bigint AS pending`;

/** Charges per UTC day of the request, oldest first, with every day of the window present. */
export async function spendByDay(q: Queryable, accountId: string, days: number, now = new Date()): Promise<DaySpend[]> {
  const dates = windowDays(days, now);
  const { rows } = await q.query<{ day: string; amount: bigint; charged: bigint; not_charged: bigint; pending: bigint }>(
    `SELECT to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day, sum(captured_micros)::bigint AS amount, ${OUTCOME_COUNTS}
     FROM billing.cost_records WHERE account_id = $1 AND created_at >= $2 GROUP BY 1`,
    [accountId, new Date(`${dates[0]}T00:00:00Z`)],
  );
  const byDay = new Map(rows.map((row) => [row.day, row]));
  return dates.map((date) => {
    const row = byDay.get(date);
    return {
      date,
      amountMicros: row?.amount ?? 0n,
      requests: Number(row?.charged ?? 0n),
      notCharged: Number(row?.not_charged ?? 0n),
      pending: Number(row?.pending ?? 0n),
    };
  });
}

export async function keySpend(q: Queryable, accountId: string, keyIds: string[]) {
  const { rows } = await q.query<{ key_id: string; captured_micros: bigint; held_micros: bigint }>(
    "SELECT key_id, captured_micros, held_micros FROM billing.key_spend WHERE account_id = $1 AND key_id = ANY($2::text[])",
    [accountId, keyIds],
  );
  const found = new Map(rows.map((row) => [row.key_id, row]));
  return keyIds.map((keyId) => ({
    keyId,
    capturedMicros: found.get(keyId)?.captured_micros ?? 0n,
    heldMicros: found.get(keyId)?.held_micros ?? 0n,
  }));
}
