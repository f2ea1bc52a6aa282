import type { Db } from "@orvado/db";

// The public cost lookup (GET /api/cost/request/<id>) needs no key, so each client
// address may look up at most `maxPerWindow` request ids per fixed window. The count
// is one atomic upsert in Postgres (billing.cost_lookup_windows): every billing
// replica behind every edge counts the same lookups, and parallel lookups cannot
// slip past the limit.

export interface CostLookupLimitPolicy {
  windowMs: number;
  maxPerWindow: number;
}

export const DEFAULT_COST_LOOKUP_LIMIT: CostLookupLimitPolicy = { windowMs: 60_000, maxPerWindow: 120 };

/** Windows older than the current one decide nothing; sweeping at most this often keeps the table small. */
const SWEEP_INTERVAL_MS = 60_000;

/** A client address is at most this long (an IPv6 address with a zone is well under it). */
const MAX_ADDRESS_LENGTH = 100;

export type LookupAdmission = { allowed: true } | { allowed: false; retryAfterSeconds: number };

export class CostLookupLimiter {
  #lastSweep = 0;

  constructor(
    private readonly db: Db,
    private readonly policy: CostLookupLimitPolicy,
    private readonly now: () => number = Date.now,
  ) {}

  /** Counts one lookup by `clientAddress`; refused once the window's lookups are used up. */
  async admit(clientAddress: string): Promise<LookupAdmission> {
    const now = this.now();
    const windowStart = now - (now % this.policy.windowMs);
    const { rows } = await this.db.query<{ lookups: number }>(
      `INSERT INTO billing.cost_lookup_windows (client_address, window_start, lookups) VALUES ($1, $2::timestamptz, 1)
       ON CONFLICT (client_address, window_start) DO UPDATE SET lookups = cost_lookup_windows.lookups + 1
       RETURNING lookups`,
      [clientAddress.slice(0, MAX_ADDRESS_LENGTH), new Date(windowStart).toISOString()],
    );
    await this.#sweep(now, windowStart);
    if (rows[0]!.lookups <= this.policy.maxPerWindow) return { allowed: true };
    return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil((windowStart + this.policy.windowMs - now) / 1000)) };
  }

  async #sweep(now: number, windowStart: number): Promise<void> {
    if (now - this.#lastSweep < SWEEP_INTERVAL_MS) return;
    this.#lastSweep = now;
    await this.db.query("DELETE FROM billing.cost_lookup_windows WHERE window_start < $1::timestamptz", [new Date(windowStart).toISOString()]);
  }
}
