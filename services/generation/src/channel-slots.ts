import { prepareStatement, type Db, type Queryable } from "@orvado/db";

// The statements behind shared channel capacity and circuit breakers
// (tables: migrations/005_channel_slots.sql; functions: sql/functions/): one to take slots for the jobs asking at one moment, one to give a slot back
// with the call's outcome, one per process and renewal interval to renew every
// lease it holds, one to read every channel's state for /v1/models.
//
// The writes do not wait for the WAL flush (durable: false): a crash of the
// database server may lose the last few hundred milliseconds of them. A lost
// take lets that job run uncounted until it ends; a lost release or renewal
// leaves a lease that expires by itself within the TTL. Both are bounded, and
// neither touches money; waiting would add two flushes to every upstream job.

export type BreakerState = "closed" | "open" | "half-open";

export interface BreakerSettings {
  /** Consecutive failures, counted across replicas, that open a channel's breaker. */
  failureThreshold: number;
  /** How long an open breaker keeps its channel out of rotation before one trial. */
  cooldownMs: number;
}

/** A slot taken, or why none was. */
export type SharedTake = { ok: true; channelKey: string } | { ok: false; reason: "full" | "unhealthy"; retryAfterMs: number };

/**
 * Takes a slot for each of `slotIds` (jobs asking at the same moment) on the first of `channels`
 * (priority order) that lets a job through, in one statement; answers one take per slot, in order.
 */
export async function takeSharedSlots(
  db: Db,
  take: { slotIds: string[]; holder: string; channels: { key: string; capacity: number }[]; failureThreshold: number; leaseTtlMs: number },
): Promise<SharedTake[]> {
  const { rows } = await db.query<{ slot_id: string; channel_key: string | null; refused: "full" | "unhealthy" | null; retry_after_ms: string }>(
    TAKE_CHANNEL_SLOTS,
    [take.slotIds, take.holder, take.channels.map((c) => c.key), take.channels.map((c) => c.capacity), take.failureThreshold, take.leaseTtlMs],
    { durable: false },
  );
  const bySlot = new Map(rows.map((row) => [row.slot_id, row]));
  return take.slotIds.map((slotId) => {
    const row = bySlot.get(slotId);
    if (!row) throw new Error("generation.take_channel_slots gave no row for a slot");
    if (row.channel_key !== null) return { ok: true, channelKey: row.channel_key };
    return { ok: false, reason: row.refused ?? "full", retryAfterMs: Number(row.retry_after_ms) };
  });
}

const TAKE_CHANNEL_SLOTS = prepareStatement(
  "SELECT slot_id, channel_key, refused, retry_after_ms FROM generation.take_channel_slots($1::text[], $2, $3::text[], $4::int[], $5::int, $6::bigint)",
);

/**
 * What the upstream's answer teaches the breaker (a call that never happened teaches nothing);
 * a failure carries the upstream's cause, kept for channel health.
 */
export type ReleasedCall = { outcome: "succeeded" | "cancelled" } | { outcome: "failed"; detail: string };

/** Gives the slot back and teaches its breaker; answers true when this failure opened the breaker. */
export async function releaseSharedSlot(db: Db, slotId: string, channelKey: string, call: ReleasedCall, breaker: BreakerSettings): Promise<boolean> {
  const detail = call.outcome === "failed" ? call.detail.slice(0, FAILURE_DETAIL_MAX_CHARS) : null;
  const { rows } = await db.query<{ opened: boolean }>(
    "SELECT generation.release_channel_slot($1, $2, $3, $4::int, $5::bigint, $6) AS opened",
    [slotId, channelKey, call.outcome, breaker.failureThreshold, breaker.cooldownMs, detail],
    { durable: false },
  );
  return rows[0]?.opened === true;
}

/**
 * Extends the leases of the slots this process holds. A lease that has already
 * expired stays expired: another replica may have taken its room meanwhile.
 * A slot another statement has locked (its release, a take clearing expired
 * leases) is skipped, not waited for: a renewal of thousands of rows that waited
 * met those statements in the other order and PostgreSQL ended one as a
 * deadlock. A skipped lease is renewed by the next round, well within its TTL.
 * Answers how many were renewed.
 */
export async function renewSharedSlots(db: Db, slotIds: string[], leaseTtlMs: number): Promise<number> {
  if (slotIds.length === 0) return 0;
  const result = await db.query(
    `UPDATE generation.channel_slots SET expires_at = clock_timestamp() + $2::bigint * interval '1 millisecond'
      WHERE slot_id IN (SELECT slot_id FROM generation.channel_slots
                         WHERE slot_id = ANY($1::text[]) AND expires_at > clock_timestamp()
                         FOR UPDATE SKIP LOCKED)`,
    [slotIds, leaseTtlMs],
    { durable: false },
  );
  return result.rowCount ?? 0;
}

export interface SharedChannelState {
  state: BreakerState;
  /** Live leases on the channel, across every replica. */
  inUse: number;
}

/** Every listed channel's breaker state and live slots, as every replica sees them. */
export async function readSharedStates(q: Queryable, channelKeys: string[], failureThreshold: number): Promise<Map<string, SharedChannelState>> {
  const { rows } = await q.query<{ channel_key: string; failures: number | null; open_now: boolean | null; in_use: string }>(
    `SELECT k.channel_key, s.consecutive_failures AS failures, s.opened_until > clock_timestamp() AS open_now,
            (SELECT count(*) FROM generation.channel_slots c WHERE c.channel_key = k.channel_key AND c.expires_at > clock_timestamp()) AS in_use
       FROM unnest($1::text[]) AS k (channel_key)
       LEFT JOIN generation.channel_state s ON s.channel_key = k.channel_key`,
    [channelKeys],
  );
  const states = new Map<string, SharedChannelState>();
  for (const row of rows) {
    const state: BreakerState = (row.failures ?? 0) < failureThreshold ? "closed" : row.open_now ? "open" : "half-open";
    states.set(row.channel_key, { state, inUse: Number(row.in_use) });
  }
  return states;
}

/**
 * At start: a breaker opened before it stays open no longer than `opened_at` plus this
 * process's cool-down (or, opened by a release without opened_at, one cool-down from now).
 * A restart never extends a breaker; one with a shorter cool-down shortens it.
 */
export async function boundOpenBreakers(q: Queryable, cooldownMs: number): Promise<number> {
  const result = await q.query(
    `UPDATE generation.channel_state
        SET opened_until = COALESCE(opened_at, clock_timestamp()) + $1::bigint * interval '1 millisecond'
      WHERE opened_until > COALESCE(opened_at, clock_timestamp()) + $1::bigint * interval '1 millisecond'`,
    [cooldownMs],
  );
  return result.rowCount ?? 0;
}

/**
 * The operator closes a channel's breaker (orvado channels reset, the console's Reset): its
 * failures start again from zero and every replica tries it at once. Its last failure is kept.
 * False when the channel never had a breaker row (nothing to reset).
 */
export async function resetBreaker(q: Queryable, channelKey: string): Promise<boolean> {
  const result = await q.query(
    "UPDATE generation.channel_state SET consecutive_failures = 0, opened_until = NULL, opened_at = NULL, trial_slot = NULL WHERE channel_key = $1",
    [channelKey],
  );
  return (result.rowCount ?? 0) > 0;
}

/** The longest cause kept with a failed job or a channel (migration 009 bounds the columns). */
export const FAILURE_DETAIL_MAX_CHARS = 2000;

/** Keeps what the upstream said when a call on a channel without a shared slot (the sandbox) failed, for channel health. */
export async function recordChannelFailure(db: Db, channelKey: string, detail: string): Promise<void> {
  await db.query(
    `INSERT INTO generation.channel_state (channel_key, last_failure_detail, last_failure_at) VALUES ($1, $2, clock_timestamp())
     ON CONFLICT (channel_key) DO UPDATE SET last_failure_detail = EXCLUDED.last_failure_detail, last_failure_at = EXCLUDED.last_failure_at`,
    [channelKey, detail.slice(0, FAILURE_DETAIL_MAX_CHARS)],
    { durable: false },
  );
}

export interface ChannelFailure {
  detail: string;
  at: Date;
}

/** Each listed channel's last failure, if it ever failed. */
export async function lastChannelFailures(q: Queryable, channelKeys: string[]): Promise<Map<string, ChannelFailure>> {
  const { rows } = await q.query<{ channel_key: string; last_failure_detail: string; last_failure_at: Date }>(
    "SELECT channel_key, last_failure_detail, last_failure_at FROM generation.channel_state WHERE channel_key = ANY($1::text[]) AND last_failure_at IS NOT NULL",
    [channelKeys],
  );
  return new Map(rows.map((row) => [row.channel_key, { detail: row.last_failure_detail, at: new Date(row.last_failure_at) }]));
}
