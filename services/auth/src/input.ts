import { Code, ConnectError } from "@orvado/rpc";
import { Role, type AccountLimits, type CreateAccountRequest, type CreateKeyRequest } from "@orvado/proto";
import { MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH } from "./passwords.ts";

// Checks on what callers send. Bad input is the caller's bug, not an expected
// refusal, so it is a ConnectError InvalidArgument with a message saying what to fix.

const invalid = (message: string) => new ConnectError(message, Code.InvalidArgument);

// Deliberately loose: one "@", something before it, a dot in the domain, no spaces.
// Whether the mailbox exists is not ours to decide.
const EMAIL = /^[^\s@]+@[^\s@.]+(\.[^\s@.]+)+$/;
const MAX_EMAIL_LENGTH = 254;
export const MAX_KEY_NAME_LENGTH = 100;
const MAX_MODELS = 100;
const MAX_MODEL_ID_LENGTH = 200;
/** 9999-12-31T23:59:59.999Z, the last instant both JS Date and timestamptz render plainly. */
const MAX_EXPIRY_MS = 253_402_300_799_999n;

export function normaliseEmail(email: string): string {
  const normalised = email.trim().toLowerCase();
  if (normalised === "") throw invalid("email is required");
  if (normalised.length > MAX_EMAIL_LENGTH) throw invalid(`email must be at most ${MAX_EMAIL_LENGTH} characters`);
  if (!EMAIL.test(normalised)) throw invalid(`email "${normalised}" is not a valid address`);
  return normalised;
}

export function checkPassword(password: string): string {
  if (password.length < MIN_PASSWORD_LENGTH) throw invalid(`password must be at least ${MIN_PASSWORD_LENGTH} characters`);
  if (password.length > MAX_PASSWORD_LENGTH) throw invalid(`password must be at most ${MAX_PASSWORD_LENGTH} characters`);
  return password;
}

export function accountRole(role: Role): Role.USER | Role.ADMIN {
  if (role === Role.UNSPECIFIED || role === Role.USER) return Role.USER;
  if (role === Role.ADMIN) return Role.ADMIN;
  throw invalid(`role ${role} is not a known role`);
}

export function accountInput(req: CreateAccountRequest) {
  return { email: normaliseEmail(req.email), password: checkPassword(req.password), role: accountRole(req.role) };
}

export interface KeyInput {
  accountId: string;
  name: string;
  limitMicros: bigint | null;
  expiresAt: Date | null;
  models: string[];
  requestsPerMinute: number | null;
}

/** The ranges auth.accounts and auth.api_keys accept (migrations/003_account_limits.sql). */
export const MAX_CONCURRENT_JOBS_LIMIT = 100_000;
export const MAX_REQUESTS_PER_MINUTE = 1_000_000;

function requestsPerMinute(value: number | undefined, field: string): number | null {
  if (value === undefined) return null;
  if (value < 1 || value > MAX_REQUESTS_PER_MINUTE) throw invalid(`${field} must be from 1 to ${MAX_REQUESTS_PER_MINUTE} (leave it unset for no limit)`);
  return value;
}

export function accountLimitsInput(limits: AccountLimits | undefined) {
  const max = limits?.maxConcurrentJobs;
  if (max !== undefined && max > MAX_CONCURRENT_JOBS_LIMIT) {
    throw invalid(`max_concurrent_jobs must be from 0 (no limit) to ${MAX_CONCURRENT_JOBS_LIMIT}`);
  }
  return { maxConcurrentJobs: max ?? null, requestsPerMinute: requestsPerMinute(limits?.requestsPerMinute, "requests_per_minute") };
}

export function keyInput(req: CreateKeyRequest, nowMs: number): KeyInput {
  if (req.accountId === "") throw invalid("account_id is required");
  const name = req.name.trim() === "" ? "default" : req.name.trim();
  if (name.length > MAX_KEY_NAME_LENGTH) throw invalid(`name must be at most ${MAX_KEY_NAME_LENGTH} characters`);
  if (req.limitMicros !== undefined && req.limitMicros < 0n) throw invalid("limit_micros must not be negative");
  let expiresAt: Date | null = null;
  if (req.expiresAtUnixMs !== undefined) {
    if (req.expiresAtUnixMs <= BigInt(nowMs)) throw invalid("expires_at_unix_ms must be in the future");
    if (req.expiresAtUnixMs > MAX_EXPIRY_MS) throw invalid("expires_at_unix_ms is too far in the future");
    expiresAt = new Date(Number(req.expiresAtUnixMs));
  }
  const models = [...new Set(req.models.map((model) => model.trim()))];
  if (models.length > MAX_MODELS) throw invalid(`a key may name at most ${MAX_MODELS} models`);
  for (const model of models) {
    if (model === "") throw invalid("models must not contain an empty id");
    if (model.length > MAX_MODEL_ID_LENGTH) throw invalid(`model ids must be at most ${MAX_MODEL_ID_LENGTH} characters`);
  }
  return {
    accountId: req.accountId,
    name,
    limitMicros: req.limitMicros ?? null,
    expiresAt,
    models,
    requestsPerMinute: requestsPerMinute(req.requestsPerMinute, "requests_per_minute"),
  };
}
