import { randomBytes } from "node:crypto";
import { newId } from "@orvado/core";
import type { Db } from "@orvado/db";

// An account's webhook endpoints (generation.webhook_endpoints). Every statement names
// the account, so another account's endpoint id finds nothing.

export interface EndpointRow {
  endpoint_id: string;
  account_id: string;
  url: string;
  events: string[];
  created_at: Date;
}

const COLUMNS = "endpoint_id, account_id, url, events, created_at";
/** An account's endpoints are few; this bounds what one account can make the sender do per job. */
export const MAX_ENDPOINTS_PER_ACCOUNT = 20;

/**
 * A Standard Webhooks secret: `whsec_` and the base64 of 32 random bytes (the standard
 * asks for 24 to 64). Stored as it is: the sender signs with it, so it must be readable.
 */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString("base64")}`;
}

export class TooManyEndpoints extends Error {}

/**
 * Creates an endpoint unless the account already has the most it may. Two creates at once (on
 * two replicas) would each count the rows before the other's insert and both pass: the account's
 * creates take turns on a transaction lock, and each counts in a statement begun after its turn
 * came, so it sees every create committed before it.
 */
export async function createEndpoint(db: Db, accountId: string, url: string, events: string[]): Promise<{ endpoint: EndpointRow; secret: string }> {
  const secret = newWebhookSecret();
  const endpointId = newId("whep");
  const rows = await db.tx(async (q) => {
    await q.query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", [`orvado.webhook-endpoints.${accountId}`]);
    const created = await q.query<EndpointRow>(
      `INSERT INTO generation.webhook_endpoints (endpoint_id, account_id, url, events, secret)
         SELECT $1, $2, $3, $4, $5
          WHERE (SELECT count(*) FROM generation.webhook_endpoints WHERE account_id = $2) < $6
       RETURNING ${COLUMNS}`,
      [endpointId, accountId, url, events, secret, MAX_ENDPOINTS_PER_ACCOUNT],
    );
    return created.rows;
  });
  if (!rows[0]) throw new TooManyEndpoints(`an account has at most ${MAX_ENDPOINTS_PER_ACCOUNT} webhook endpoints`);
  return { endpoint: rows[0], secret };
}

export async function listEndpoints(db: Db, accountId: string): Promise<EndpointRow[]> {
  const { rows } = await db.query<EndpointRow>(
    `SELECT ${COLUMNS} FROM generation.webhook_endpoints WHERE account_id = $1 ORDER BY created_at DESC, endpoint_id`,
    [accountId],
  );
  return rows;
}

/** Deletes the endpoint with its deliveries. An empty account id is the operator's (the CLI names the endpoint alone). */
export async function deleteEndpoint(db: Db, accountId: string, endpointId: string): Promise<EndpointRow | null> {
  const { rows } = await db.query<EndpointRow>(
    `DELETE FROM generation.webhook_endpoints WHERE endpoint_id = $1 AND ($2 = '' OR account_id = $2) RETURNING ${COLUMNS}`,
    [endpointId, accountId],
  );
  return rows[0] ?? null;
}

/** A new secret; attempts from now on are signed with it. */
export async function rotateSecret(db: Db, accountId: string, endpointId: string): Promise<{ endpoint: EndpointRow; secret: string } | null> {
  const secret = newWebhookSecret();
  const { rows } = await db.query<EndpointRow>(
    `UPDATE generation.webhook_endpoints SET secret = $3 WHERE endpoint_id = $1 AND account_id = $2 RETURNING ${COLUMNS}`,
    [endpointId, accountId, secret],
  );
  return rows[0] ? { endpoint: rows[0], secret } : null;
}
