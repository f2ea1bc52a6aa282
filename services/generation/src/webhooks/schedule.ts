// Standard Webhooks' retry schedule: after a failed attempt the next waits 5 s, 5 min,
// 30 min, 2 h, 5 h, 10 h, 10 h; after the eighth attempt fails the delivery is failed.

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
export const RETRY_DELAYS_MS = [5000, 5 * MINUTE, 30 * MINUTE, 2 * HOUR, 5 * HOUR, 10 * HOUR, 10 * HOUR] as const;

/**
 * The wait before the next attempt after `failedAttempts` failures, or null when none is left.
 * `firstRetryMs` replaces the first step only (WEBHOOK_FIRST_RETRY_MS, at most 5 s, for tests).
 */
export function retryDelayMs(failedAttempts: number, firstRetryMs: number): number | null {
  if (failedAttempts < 1 || failedAttempts > RETRY_DELAYS_MS.length) return null;
  return failedAttempts === 1 ? firstRetryMs : RETRY_DELAYS_MS[failedAttempts - 1]!;
}
