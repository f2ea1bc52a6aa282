import { z } from "zod";
import { ErrorCode } from "@orvado/proto";
import { PLAYGROUND_KEY_ALIAS, TIMESTAMP_RANGE_TEXT, parseSupportedTimestamp, playgroundKeyId } from "@orvado/core";
import { refuse } from "./errors.ts";
import { queryInteger } from "./query-numbers.ts";

// The usage filters of GET /usage and /usage.csv, turned into ListCostRecords' terms.

const DAY_MS = 86_400_000;
const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/;

export const UsageQuery = z.strictObject({
  keyId: z.string().min(1).max(200).optional(),
  model: z.string().min(1).max(200).optional(),
  /** The end-user id requests carried (OpenAI's `user`, at most 256 characters). */
  user: z.string().min(1).max(256).optional(),
  from: z.string().max(40).optional(),
  to: z.string().max(40).optional(),
  limit: queryInteger(1, 200).default(50),
  cursor: z.string().max(500).optional(),
});

export type UsageQuery = z.infer<typeof UsageQuery>;

/**
 * A bound as unix ms. A plain date means the whole UTC day: "from" its start,
 * "to" the end of it (billing's upper bound is exclusive, so the next midnight).
 */
export function boundMs(text: string | undefined, field: "from" | "to"): bigint | undefined {
  if (text === undefined) return undefined;
  // Out of range (such as -271821-04-20) is refused like no time at all: PostgreSQL could not compare it.
  const ms = parseSupportedTimestamp(DATE_ONLY.test(text) ? `${text}T00:00:00Z` : text);
  if (ms === null) throw refuse(ErrorCode.INVALID_FIELD, `${field} must be a date (YYYY-MM-DD) or an ISO 8601 time ${TIMESTAMP_RANGE_TEXT}`);
  return BigInt(DATE_ONLY.test(text) && field === "to" ? ms + DAY_MS : ms);
}

export function costFilter(accountId: string, query: UsageQuery) {
  const fromUnixMs = boundMs(query.from, "from");
  const toUnixMs = boundMs(query.to, "to");
  if (fromUnixMs !== undefined && toUnixMs !== undefined && toUnixMs <= fromUnixMs) {
    throw refuse(ErrorCode.INVALID_FIELD, "to must be after from");
  }
  return {
    accountId,
    // "console" names the account's own playground key (the console's filter uses the word).
    ...(query.keyId !== undefined && { keyId: query.keyId === PLAYGROUND_KEY_ALIAS ? playgroundKeyId(accountId) : query.keyId }),
    ...(query.model !== undefined && { model: query.model }),
    ...(query.user !== undefined && { user: query.user }),
    ...(fromUnixMs !== undefined && { fromUnixMs }),
    ...(toUnixMs !== undefined && { toUnixMs }),
  };
}
