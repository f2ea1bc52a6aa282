import type { Db } from "@orvado/db";

// Sign-in rate limiting: at most maxPerAccount failed sign-ins per email and
// maxPerIp per client address within a sliding window. Failures live in Postgres
// (auth.sign_in_failures), not in one process's memory, so several auth replicas
// behind several edges count the same attempts. A blocked email stays blocked even
// for the right password until the window frees a slot: that is what stops guessing.

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

export const emailScope = (email: string) => `email:${email}`;
export const ipScope = (ip: string) => `ip:${ip}`;

export class SignInLimiter {
  #lastSweep = 0;

  constructor(
    private readonly db: Db,
    private readonly policy: SignInLimitPolicy,
    private readonly now: () => number,
  ) {}

  /** Blocked when either the email or the address has used up its failures in the window. */
  async check(email: string, ip: string): Promise<LimitCheck> {
    const waits = await Promise.all([
      this.#waitMs(emailScope(email), this.policy.maxPerAccount),
      ip === "" ? 0 : this.#waitMs(ipScope(ip), this.policy.maxPerIp),
    ]);
    const waitMs = Math.max(...waits);
    return waitMs > 0 ? { blocked: true, retryAfterSeconds: Math.max(1, Math.ceil(waitMs / 1000)) } : { blocked: false };
  }

  async recordFailure(email: string, ip: string): Promise<void> {
    const at = new Date(this.now()).toISOString();
    const scopes = ip === "" ? [emailScope(email)] : [emailScope(email), ipScope(ip)];
    await this.db.query(
      "INSERT INTO auth.sign_in_failures (scope, failed_at) SELECT unnest($1::text[]), $2::timestamptz",
      [scopes, at],
    );
    await this.#sweep();
  }

  /** A correct password clears the email's failures, so its owner is not locked out by old typos. */
  async clearAccount(email: string): Promise<void> {
    await this.db.query("DELETE FROM auth.sign_in_failures WHERE scope = $1", [emailScope(email)]);
  }

  /**
   * How long until the scope may try again: the max-th most recent failure in the
   * window is the one that has to age out before another attempt is allowed.
   */
  async #waitMs(scope: string, max: number): Promise<number> {
    const since = new Date(this.now() - this.policy.windowMs).toISOString();
    const result = await this.db.query<{ failed_at: Date }>(
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
