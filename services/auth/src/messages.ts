import type { MessageInitShape } from "@bufbuild/protobuf";
import type { AccountLimitsSchema, AccountSchema, ApiKeySchema } from "@orvado/proto";
import { roleValue, type AccountRow, type KeyRow } from "./store.ts";

// Rows of the auth schema as proto messages.

const toUnixMs = (date: Date) => BigInt(date.getTime());

export function accountMessage(row: AccountRow): MessageInitShape<typeof AccountSchema> {
  return {
    accountId: row.account_id,
    email: row.email,
    role: roleValue(row.role),
    disabled: row.disabled,
    createdAtUnixMs: toUnixMs(row.created_at),
    limits: accountLimitsMessage(row),
    passwordGenerated: row.password_generated,
  };
}

/** NULL columns stay unset: the default concurrency, no rate limit. */
export function accountLimitsMessage(row: Pick<AccountRow, "max_concurrent_jobs" | "requests_per_minute">): MessageInitShape<typeof AccountLimitsSchema> {
  return {
    ...(row.max_concurrent_jobs !== null && { maxConcurrentJobs: row.max_concurrent_jobs }),
    ...(row.requests_per_minute !== null && { requestsPerMinute: row.requests_per_minute }),
  };
}

export function keyMessage(row: KeyRow): MessageInitShape<typeof ApiKeySchema> {
  return {
    keyId: row.key_id,
    accountId: row.account_id,
    name: row.name,
    ...(row.limit_micros !== null && { limitMicros: row.limit_micros }),
    ...(row.expires_at !== null && { expiresAtUnixMs: toUnixMs(row.expires_at) }),
    models: row.models,
    createdAtUnixMs: toUnixMs(row.created_at),
    prefix: row.prefix,
    ...(row.revoked_at !== null && { revokedAtUnixMs: toUnixMs(row.revoked_at) }),
    ...(row.last_used_at !== null && { lastUsedAtUnixMs: toUnixMs(row.last_used_at) }),
    ...(row.requests_per_minute !== null && { requestsPerMinute: row.requests_per_minute }),
  };
}
