import type { Queryable } from "@orvado/db";

// The end-user id a request carried (OpenAI's `user`, migration 011): written once its
// hold is made, read with the account's cost records.

/** Idempotent: a repeated reservation of the same request keeps the first row. */
export async function recordEndUser(q: Queryable, requestId: string, accountId: string, endUser: string): Promise<void> {
  await q.query(
    `INSERT INTO billing.request_end_users (request_id, account_id, end_user) VALUES ($1, $2, $3)
     ON CONFLICT (request_id) DO NOTHING`,
    [requestId, accountId, endUser],
  );
}
