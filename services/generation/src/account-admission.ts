import { ErrorCode, type JobLimits, type Refusal } from "@orvado/proto";
import { refusal } from "@orvado/core";
import type { Queryable } from "@orvado/db";

// Fair share between tenants (docs/api.md, "Limits"): an account's concurrent jobs,
// and requests per minute per account and per key. The counts live in PostgreSQL
// (migrations/003_account_admission.sql, sql/functions/admit_job.sql) so several edge and generation replicas
// enforce one limit. A refused request has held and charged nothing: admission
// comes before the channel slot and the billing reservation.

/** Jobs end at times nobody knows in advance; a few seconds is a fair first wait. */
export const CONCURRENT_JOB_RETRY_AFTER_SECONDS = 5;

/** The limits one request runs under; null is "not limited". */
export interface EffectiveLimits {
  maxConcurrentJobs: number | null;
  accountRequestsPerMinute: number | null;
  keyRequestsPerMinute: number | null;
}

/**
 * The request's limits with the service default filled in: an account without a
 * concurrent-job limit of its own gets `defaultMaxConcurrentJobs`; 0 (either) means none.
 */
export function effectiveLimits(limits: JobLimits | undefined, defaultMaxConcurrentJobs: number): EffectiveLimits {
  const max = limits?.accountMaxConcurrentJobs ?? defaultMaxConcurrentJobs;
  const positive = (value: number | undefined) => (value !== undefined && value > 0 ? value : null);
  return {
    maxConcurrentJobs: max > 0 ? max : null,
    accountRequestsPerMinute: positive(limits?.accountRequestsPerMinute),
    keyRequestsPerMinute: positive(limits?.keyRequestsPerMinute),
  };
}

export type Admission = { ok: true; leased: boolean } | { ok: false; refusal: Refusal };

const ADMITTED: Admission = { ok: true, leased: false };

/**
 * Admits the job or refuses it with 429. When the account has a concurrent-job limit
 * the job holds a lease until releaseJobLease (or the lease's expiry, `leaseMs`).
 */
export async function admitJob(
  q: Queryable,
  ids: { requestId: string; accountId: string; keyId: string },
  limits: EffectiveLimits,
  leaseMs: number,
): Promise<Admission> {
  if (limits.maxConcurrentJobs === null && limits.accountRequestsPerMinute === null && limits.keyRequestsPerMinute === null) return ADMITTED;
  const { rows } = await q.query<{ refused: string | null; retry_after_seconds: number }>(
    "SELECT refused, retry_after_seconds FROM generation.admit_job($1, $2, $3, $4::int, $5::int, $6::int, $7::bigint)",
    [ids.requestId, ids.accountId, ids.keyId, limits.maxConcurrentJobs, limits.accountRequestsPerMinute, limits.keyRequestsPerMinute, leaseMs],
  );
  const row = rows[0];
  if (!row) throw new Error("generation.admit_job gave no row");
  if (row.refused === null) return { ok: true, leased: limits.maxConcurrentJobs !== null };
  return { ok: false, refusal: limitRefusal(row.refused, limits, row.retry_after_seconds) };
}

function limitRefusal(which: string, limits: EffectiveLimits, windowLeftSeconds: number): Refusal {
  const retry = { retryAfterSeconds: windowLeftSeconds, shouldRetry: true };
  switch (which) {
    case "account_rpm":
      return refusal(ErrorCode.RATE_LIMIT_EXCEEDED, `This account may start ${limits.accountRequestsPerMinute} image requests per minute; retry in ${windowLeftSeconds} seconds`, retry) as Refusal;
    case "key_rpm":
      return refusal(ErrorCode.RATE_LIMIT_EXCEEDED, `This API key may start ${limits.keyRequestsPerMinute} image requests per minute; retry in ${windowLeftSeconds} seconds`, retry) as Refusal;
    default:
      return refusal(
        ErrorCode.CONCURRENT_JOB_LIMIT,
        `This account already runs ${limits.maxConcurrentJobs} jobs at once, its limit; retry when one has finished`,
        { retryAfterSeconds: CONCURRENT_JOB_RETRY_AFTER_SECONDS, shouldRetry: true },
      ) as Refusal;
  }
}

/** Gives the job's concurrent-job slot back (a no-op when it held none). */
export async function releaseJobLease(q: Queryable, requestId: string): Promise<void> {
  await q.query("DELETE FROM generation.job_leases WHERE request_id = $1", [requestId]);
}
