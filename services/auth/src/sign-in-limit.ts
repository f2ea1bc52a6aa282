import type { Db, Queryable } from "@orvado/db";

// Sign-in rate limiting: at most maxPerAccount failed sign-ins per email and
// maxPerIp per client address within a sliding window. Attempts live in Postgres
// (auth.sign_in_failures), not in one process's memory, so several auth replicas
// behind several edges count the same attempts. A blocked email stays blocked even
// for the right password until the window frees a slot: that is what stops guessing.
//
// An attempt is counted BEFORE its password is checked, under a per-scope advisory
// lock, and uncounted only if it succeeds: however many attempts arrive at once,
// at most the limit of them reach the password check in a window.

export interface SignInLimitPolicy {
  windowMs: number;
  maxPerAccount: number;
  maxPerIp: number;
}

export const DEFAULT_SIGN_IN_LIMITS: SignInLimitPolicy = {
  windowMs: 15 * 60_000,
  maxPerAccount: 10,
  maxPerIp: 50,
};

/** Old rows decide nothing; sweeping them at most this often keeps the table small. */
const SWEEP_INTERVAL_MS = 60_000;

export type LimitCheck = { blocked: false } | { blocked: true; retryAfterSeconds: number };
/** An admitted attempt: counted as a failure until settled as a success. */
export type Admission = { blocked: false; attemptIds: string[] } | { blocked: true; retryAfterSeconds: number };

export const emailScope = (email: string) => `email:${email}`;
export const ipScope = (ip: string) => `ip:${ip}`;

export class SignInLimiter {
  #lastSweep = 0;

  constructor(
    private readonly db: Db,
    private readonly policy: SignInLimitPolicy,
    private readonly now: () => number,
  ) {}

  /**
   * Counts one attempt against the email and the address, or refuses it when either
   * has used up its failures in the window. Check and count happen in one transaction
   * holding each scope's lock, so parallel attempts see each other's counts.
   */
  async admit(email: string, ip: string): Promise<Admission> {
    const scopes: [string, number][] = [[emailScope(email), this.policy.maxPerAccount]];
    if (ip !== "") scopes.push([ipScope(ip), this.policy.maxPerIp]);
    const admission = await this.db.tx(async (q): Promise<Admission> => {
      // Always email first, then address: two attempts never wait on each other crosswise.
      for (const [scope] of scopes) await q.query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", [scope]);
      let waitMs = 0;
      for (const [scope, max] of scopes) waitMs = Math.max(waitMs, await this.#waitMs(q, scope, max));
      if (waitMs > 0) return { blocked: true, retryAfterSeconds: Math.max(1, Math.ceil(waitMs / 1000)) };
      const inserted = await q.query<{ attempt_id: string }>(
        "INSERT INTO auth.sign_in_failures (scope, failed_at) SELECT unnest($1::text[]), $2::timestamptz RETURNING attempt_id",
        [scopes.map(([scope]) => scope), new Date(this.now()).toISOString()],
      );
      return { blocked: false, attemptIds: inserted.rows.map((row) => String(row.attempt_id)) };
    });
    await this.#sweep();
    return admission;
  }

  /**
   * The attempt was right: it is no failure, and the email's earlier failures are
   * cleared so its owner is not locked out by old typos.
   */
  async succeeded(email: string, attemptIds: string[]): Promise<void> {
    await this.db.query("DELETE FROM auth.sign_in_failures WHERE attempt_id = ANY($1::bigint[]) OR scope = $2", [
      attemptIds,
      emailScope(email),
    ]);
  }

  /**
   * How long until the scope may try again: the max-th most recent attempt in the
   * window is the one that has to age out before another attempt is allowed.
   */
  async #waitMs(q: Queryable, scope: string, max: number): Promise<number> {
    const since = new Date(this.now() - this.policy.windowMs).toISOString();
    const result = await q.query<{ failed_at: Date }>(
      `SELECT failed_at FROM auth.sign_in_failures WHERE scope = $1 AND failed_at > $2::timestamptz
        ORDER BY failed_at DESC LIMIT $3`,
      [scope, since, max],
    );
    if (result.rows.length < max) return 0;
    const oldest = result.rows[max - 1]!.failed_at.getTime();
    return Math.max(1, oldest + this.policy.windowMs - this.now());
  }

  async #sweep(): Promise<void> {
    const now = this.now();
    if (now - this.#lastSweep < SWEEP_INTERVAL_MS) return;
    this.#lastSweep = now;
    await this.db.query("DELETE FROM auth.sign_in_failures WHERE failed_at <= $1::timestamptz", [
      new Date(now - this.policy.windowMs).toISOString(),
    ]);
  }
}
