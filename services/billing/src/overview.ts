import type { Queryable } from "@orvado/db";
import { OUTCOME_COUNTS, windowDays } from "./usage.ts";

// The operator's overview across every account: requests and their outcomes,
// spend (captured charges) and money paid in (top-ups, adjustments) per UTC day,
// and the accounts and models that spent most. Summed by PostgreSQL, not here.

export interface OverviewDay {
  date: string;
  requests: number;
  charged: number;
  notCharged: number;
  pending: number;
  spendMicros: bigint;
  topUpMicros: bigint;
  adjustmentMicros: bigint;
}

export interface OverviewRank {
  id: string;
  requests: number;
  charged: number;
  notCharged: number;
  spendMicros: bigint;
}

interface OutcomeRow {
  charged: bigint;
  not_charged: bigint;
  pending: bigint;
  spend: bigint;
}

const count = (row: OutcomeRow | undefined) => ({
  charged: Number(row?.charged ?? 0n),
  notCharged: Number(row?.not_charged ?? 0n),
  pending: Number(row?.pending ?? 0n),
});

export async function overview(q: Queryable, days: number, top: number, now = new Date()) {
  const dates = windowDays(days, now);
  const from = new Date(`${dates[0]}T00:00:00Z`);
  const [requests, money, accounts, models] = await Promise.all([
    q.query<OutcomeRow & { day: string }>(
      `SELECT to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day, sum(captured_micros)::bigint AS spend, ${OUTCOME_COUNTS}
         FROM billing.cost_records WHERE created_at >= $1 GROUP BY 1`,
      [from],
    ),
    q.query<{ day: string; top_up: bigint; adjustment: bigint }>(
      `SELECT to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day,
              coalesce(sum(amount_micros) FILTER (WHERE kind = 'top_up'), 0)::bigint AS top_up,
              coalesce(sum(amount_micros) FILTER (WHERE kind = 'adjustment'), 0)::bigint AS adjustment
         FROM billing.ledger WHERE kind IN ('top_up', 'adjustment') AND created_at >= $1 GROUP BY 1`,
      [from],
    ),
    ranking(q, "account_id", from, top),
    ranking(q, "model", from, top),
  ]);
  const requestsByDay = new Map(requests.rows.map((row) => [row.day, row]));
  const moneyByDay = new Map(money.rows.map((row) => [row.day, row]));
  const daysOut: OverviewDay[] = dates.map((date) => {
    const row = requestsByDay.get(date);
    const counted = count(row);
    return {
      date,
      requests: counted.charged + counted.notCharged + counted.pending,
      ...counted,
      spendMicros: row?.spend ?? 0n,
      topUpMicros: moneyByDay.get(date)?.top_up ?? 0n,
      adjustmentMicros: moneyByDay.get(date)?.adjustment ?? 0n,
    };
  });
  return { days: daysOut, topAccounts: accounts, topModels: models };
}

/** The column is one of two fixed names, never a caller's text. */
async function ranking(q: Queryable, column: "account_id" | "model", from: Date, top: number): Promise<OverviewRank[]> {
  const { rows } = await q.query<OutcomeRow & { id: string; requests: bigint }>(
    `SELECT ${column} AS id, count(*)::bigint AS requests, sum(captured_micros)::bigint AS spend, ${OUTCOME_COUNTS}
       FROM billing.cost_records WHERE created_at >= $1
      GROUP BY 1 ORDER BY spend DESC, requests DESC, id LIMIT $2`,
    [from, top],
  );
  return rows.map((row) => {
    const counted = count(row);
    return { id: row.id, requests: Number(row.requests), charged: counted.charged, notCharged: counted.notCharged, spendMicros: row.spend };
  });
}
