import type { Queryable } from "@orvado/db";
import type { AccountRow } from "./store.ts";

// All SQL on auth.sessions. Times are passed in from the caller's clock so the
// idle and absolute expiries can be tested without waiting.

export interface SessionRow {
  token_hash: string;
  account_id: string;
  last_seen_at: Date;
  expires_at: Date;
}

export type SessionWithAccount = SessionRow & { account: AccountRow };

const iso = (ms: number) => new Date(ms).toISOString();

export async function insertSession(
  q: Queryable,
  session: { tokenHash: string; accountId: string; nowMs: number; expiresAtMs: number },
): Promise<void> {
  await q.query(
    `INSERT INTO auth.sessions (token_hash, account_id, created_at, last_seen_at, expires_at)
     VALUES ($1, $2, $3::timestamptz, $3::timestamptz, $4::timestamptz)`,
    [session.tokenHash, session.accountId, iso(session.nowMs), iso(session.expiresAtMs)],
  );
}

export async function findSession(q: Queryable, tokenHash: string): Promise<SessionWithAccount | null> {
  const result = await q.query<SessionRow & AccountRow>(
    `SELECT s.token_hash, s.account_id, s.last_seen_at, s.expires_at,
            a.email, a.role, a.disabled, a.created_at, a.max_concurrent_jobs, a.requests_per_minute, a.password_generated
       FROM auth.sessions s JOIN auth.accounts a ON a.account_id = s.account_id
      WHERE s.token_hash = $1`,
    [tokenHash],
  );
  const row = result.rows[0];
  if (!row) return null;
  return {
    token_hash: row.token_hash,
    account_id: row.account_id,
    last_seen_at: row.last_seen_at,
    expires_at: row.expires_at,
    account: {
      account_id: row.account_id,
      email: row.email,
      role: row.role,
      disabled: row.disabled,
      created_at: row.created_at,
      max_concurrent_jobs: row.max_concurrent_jobs,
      requests_per_minute: row.requests_per_minute,
      password_generated: row.password_generated,
    },
  };
}

/** The WHERE keeps a busy session to one write a minute, and replicas from undoing each other. */
export async function touchSession(q: Queryable, tokenHash: string, nowMs: number, minIntervalMs: number): Promise<void> {
  await q.query(
    `UPDATE auth.sessions SET last_seen_at = $2::timestamptz
      WHERE token_hash = $1 AND last_seen_at < $3::timestamptz`,
    [tokenHash, iso(nowMs), iso(nowMs - minIntervalMs)],
  );
}

export async function deleteSession(q: Queryable, tokenHash: string): Promise<void> {
  await q.query("DELETE FROM auth.sessions WHERE token_hash = $1", [tokenHash]);
}

/** Ends every session of the account except keepTokenHash (null ends them all). */
export async function deleteAccountSessions(q: Queryable, accountId: string, keepTokenHash: string | null): Promise<number> {
  const result = await q.query(
    "DELETE FROM auth.sessions WHERE account_id = $1 AND ($2::text IS NULL OR token_hash <> $2::text)",
    [accountId, keepTokenHash],
  );
  return result.rowCount;
}

/** Sessions past either expiry are useless; dropped from time to time so the table does not grow. */
export async function deleteExpiredSessions(q: Queryable, nowMs: number, idleMs: number): Promise<void> {
  await q.query("DELETE FROM auth.sessions WHERE expires_at <= $1::timestamptz OR last_seen_at <= $2::timestamptz", [
    iso(nowMs),
    iso(nowMs - idleMs),
  ]);
}
