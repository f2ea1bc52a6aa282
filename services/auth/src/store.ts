import { prepareStatement, type Queryable } from "@orvado/db";
import { Role } from "@orvado/proto";

// All SQL on the auth schema. Rows come back as plain objects; the service layer
// turns them into proto messages.

export interface AccountRow {
  account_id: string;
  email: string;
  role: "user" | "admin";
  disabled: boolean;
  created_at: Date;
  /** NULL: the generation service's default; 0: no limit. */
  max_concurrent_jobs: number | null;
  /** NULL: no limit. */
  requests_per_minute: number | null;
  /** The password is still the one generated at first start. */
  password_generated: boolean;
}

export interface KeyRow {
  key_id: string;
  account_id: string;
  name: string;
  prefix: string;
  limit_micros: bigint | null;
  expires_at: Date | null;
  models: string[];
  created_at: Date;
  revoked_at: Date | null;
  last_used_at: Date | null;
  requests_per_minute: number | null;
}

export interface KeyForVerify {
  key_id: string;
  account_id: string;
  secret_hash: string;
  limit_micros: bigint | null;
  expires_at: Date | null;
  models: string[];
  revoked_at: Date | null;
  account_disabled: boolean;
  requests_per_minute: number | null;
  account_max_concurrent_jobs: number | null;
  account_requests_per_minute: number | null;
}

const ACCOUNT_COLUMNS = "account_id, email, role, disabled, created_at, max_concurrent_jobs, requests_per_minute, password_generated";
const KEY_COLUMNS = "key_id, account_id, name, prefix, limit_micros, expires_at, models, created_at, revoked_at, last_used_at, requests_per_minute";

export const roleText = (role: Role.USER | Role.ADMIN) => (role === Role.ADMIN ? "admin" : "user");
export const roleValue = (text: AccountRow["role"]) => (text === "admin" ? Role.ADMIN : Role.USER);

/** null when the email is taken: the unique index decides, so concurrent creates cannot both win. */
export async function insertAccount(
  q: Queryable,
  account: { accountId: string; email: string; passwordHash: string; role: AccountRow["role"] },
): Promise<AccountRow | null> {
  const result = await q.query<AccountRow>(
    `INSERT INTO auth.accounts (account_id, email, password_hash, role) VALUES ($1, $2, $3, $4)
     ON CONFLICT (email) DO NOTHING RETURNING ${ACCOUNT_COLUMNS}`,
    [account.accountId, account.email, account.passwordHash, account.role],
  );
  return result.rows[0] ?? null;
}

export async function findAccount(q: Queryable, accountId: string): Promise<AccountRow | null> {
  const result = await q.query<AccountRow>(`SELECT ${ACCOUNT_COLUMNS} FROM auth.accounts WHERE account_id = $1`, [
    accountId,
  ]);
  return result.rows[0] ?? null;
}

export async function adminExists(q: Queryable): Promise<boolean> {
  const result = await q.query(`SELECT 1 FROM auth.accounts WHERE role = 'admin' LIMIT 1`);
  return result.rows.length > 0;
}

export async function insertKey(
  q: Queryable,
  key: {
    keyId: string;
    accountId: string;
    name: string;
    secretHash: string;
    prefix: string;
    limitMicros: bigint | null;
    expiresAt: Date | null;
    models: string[];
    requestsPerMinute: number | null;
  },
): Promise<KeyRow> {
  // bigint and Date go over as text so node-postgres and PGlite serialise them alike.
  const result = await q.query<KeyRow>(
    `INSERT INTO auth.api_keys (key_id, account_id, name, secret_hash, prefix, limit_micros, expires_at, models, requests_per_minute)
     VALUES ($1, $2, $3, $4, $5, $6::bigint, $7::timestamptz, $8::text[], $9::int) RETURNING ${KEY_COLUMNS}`,
    [
      key.keyId,
      key.accountId,
      key.name,
      key.secretHash,
      key.prefix,
      key.limitMicros === null ? null : key.limitMicros.toString(),
      key.expiresAt === null ? null : key.expiresAt.toISOString(),
      key.models,
      key.requestsPerMinute,
    ],
  );
  const row = result.rows[0];
  if (!row) throw new Error("INSERT … RETURNING gave no row");
  return row;
}

// Every key check that the edge has not remembered runs this (about once a second
// per key in use), so it is prepared: parsed and planned once per connection.
const KEY_BY_HASH = prepareStatement(
  `SELECT k.key_id, k.account_id, k.secret_hash, k.limit_micros, k.expires_at, k.models, k.revoked_at,
          k.requests_per_minute, a.disabled AS account_disabled,
          a.max_concurrent_jobs AS account_max_concurrent_jobs, a.requests_per_minute AS account_requests_per_minute
     FROM auth.api_keys k JOIN auth.accounts a ON a.account_id = k.account_id
    WHERE k.secret_hash = $1`,
);

export async function findKeyByHash(q: Queryable, secretHash: string): Promise<KeyForVerify | null> {
  const result = await q.query<KeyForVerify>(KEY_BY_HASH, [secretHash]);
  return result.rows[0] ?? null;
}

/** The WHERE keeps replicas from rewriting a timestamp another one set moments ago. */
export async function touchKey(q: Queryable, keyId: string, minIntervalMs: number): Promise<void> {
  await q.query(
    `UPDATE auth.api_keys SET last_used_at = now()
      WHERE key_id = $1 AND (last_used_at IS NULL OR last_used_at < now() - make_interval(secs => $2::double precision))`,
    [keyId, minIntervalMs / 1000],
  );
}

/** Every account, oldest first; with emailContains, those whose email contains it (emails are stored lower-case). */
export async function listAccounts(q: Queryable, emailContains = ""): Promise<AccountRow[]> {
  const result = await q.query<AccountRow>(
    `SELECT ${ACCOUNT_COLUMNS} FROM auth.accounts WHERE strpos(email, lower($1)) > 0 ORDER BY created_at, account_id`,
    [emailContains],
  );
  return result.rows;
}

export async function findAccountRowByEmail(q: Queryable, email: string): Promise<AccountRow | null> {
  const result = await q.query<AccountRow>(`SELECT ${ACCOUNT_COLUMNS} FROM auth.accounts WHERE email = $1`, [email]);
  return result.rows[0] ?? null;
}

/** Marks the account's password as generated at first start (bootstrap.ts). */
export async function markPasswordGenerated(q: Queryable, accountId: string): Promise<void> {
  await q.query("UPDATE auth.accounts SET password_generated = true WHERE account_id = $1", [accountId]);
}

/** The account with its password hash, for sign-in only. */
export async function findAccountByEmail(
  q: Queryable,
  email: string,
): Promise<(AccountRow & { password_hash: string }) | null> {
  const result = await q.query<AccountRow & { password_hash: string }>(
    `SELECT ${ACCOUNT_COLUMNS}, password_hash FROM auth.accounts WHERE email = $1`,
    [email],
  );
  return result.rows[0] ?? null;
}

export async function passwordHashOf(q: Queryable, accountId: string): Promise<string | null> {
  const result = await q.query<{ password_hash: string }>("SELECT password_hash FROM auth.accounts WHERE account_id = $1", [
    accountId,
  ]);
  return result.rows[0]?.password_hash ?? null;
}

export async function setPasswordHash(q: Queryable, accountId: string, passwordHash: string): Promise<void> {
  // A password the person chose is no longer the generated one.
  await q.query("UPDATE auth.accounts SET password_hash = $2, password_generated = false WHERE account_id = $1", [accountId, passwordHash]);
}

export async function setAccountDisabled(q: Queryable, accountId: string, disabled: boolean): Promise<AccountRow | null> {
  const result = await q.query<AccountRow>(
    `UPDATE auth.accounts SET disabled = $2 WHERE account_id = $1 RETURNING ${ACCOUNT_COLUMNS}`,
    [accountId, disabled],
  );
  return result.rows[0] ?? null;
}

/** Replaces both limits of the account; null when there is no such account. */
export async function setAccountLimits(
  q: Queryable,
  accountId: string,
  limits: { maxConcurrentJobs: number | null; requestsPerMinute: number | null },
): Promise<AccountRow | null> {
  const result = await q.query<AccountRow>(
    `UPDATE auth.accounts SET max_concurrent_jobs = $2::int, requests_per_minute = $3::int WHERE account_id = $1 RETURNING ${ACCOUNT_COLUMNS}`,
    [accountId, limits.maxConcurrentJobs, limits.requestsPerMinute],
  );
  return result.rows[0] ?? null;
}

export async function listKeys(q: Queryable, accountId: string): Promise<KeyRow[]> {
  const result = await q.query<KeyRow>(
    `SELECT ${KEY_COLUMNS} FROM auth.api_keys WHERE account_id = $1 ORDER BY created_at DESC, key_id`,
    [accountId],
  );
  return result.rows;
}

/**
 * Revokes a key of that account (the account in the WHERE is what keeps one tenant
 * off another's keys); revoking twice keeps the first time. null when the account
 * has no such key.
 */
export async function revokeKey(q: Queryable, accountId: string, keyId: string): Promise<KeyRow | null> {
  const result = await q.query<KeyRow>(
    `UPDATE auth.api_keys SET revoked_at = COALESCE(revoked_at, now())
      WHERE account_id = $1 AND key_id = $2 RETURNING ${KEY_COLUMNS}`,
    [accountId, keyId],
  );
  return result.rows[0] ?? null;
}
