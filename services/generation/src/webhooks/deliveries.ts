import type { Db } from "@orvado/db";

// Deliveries (generation.webhook_deliveries), written by the jobs trigger in the outcome's
// transaction (sql/functions/enqueue_webhook_deliveries.sql), and their attempts.

export interface DeliveryRow {
  delivery_id: string;
  endpoint_id: string;
  request_id: string;
  event_type: string;
  status: "pending" | "succeeded" | "failed";
  created_at: Date;
  next_attempt_at: Date;
}

export interface AttemptRow {
  delivery_id: string;
  started_at: Date;
  duration_ms: number;
  status_code: number | null;
  error: string | null;
}

const COLUMNS = "d.delivery_id, d.endpoint_id, d.request_id, d.event_type, d.status, d.created_at, d.next_attempt_at";

/** An account's latest deliveries (of one endpoint, or all), newest first, with their attempts oldest first. */
export async function listDeliveries(
  db: Db,
  accountId: string,
  endpointId: string,
  limit: number,
): Promise<{ delivery: DeliveryRow; attempts: AttemptRow[] }[]> {
  const { rows } = await db.query<DeliveryRow>(
    `SELECT ${COLUMNS} FROM generation.webhook_deliveries d
      WHERE d.account_id = $1 AND ($2 = '' OR d.endpoint_id = $2)
      ORDER BY d.created_at DESC, d.delivery_id LIMIT $3`,
    [accountId, endpointId, limit],
  );
  if (rows.length === 0) return [];
  const attempts = await db.query<AttemptRow>(
    `SELECT delivery_id, started_at, duration_ms, status_code, error FROM generation.webhook_attempts
      WHERE delivery_id = ANY($1::text[]) ORDER BY started_at, attempt_id`,
    [rows.map((row) => row.delivery_id)],
  );
  return rows.map((delivery) => ({ delivery, attempts: attempts.rows.filter((attempt) => attempt.delivery_id === delivery.delivery_id) }));
}

/**
 * Queues a new attempt now, with the same webhook-id: the delivery is pending again with a
 * fresh retry schedule. A claim in flight loses its right to record the outcome (its
 * attempt is still logged). Null for an unknown delivery or another account's.
 */
export async function redeliver(db: Db, accountId: string, deliveryId: string): Promise<DeliveryRow | null> {
  const { rows } = await db.query<DeliveryRow>(
    `UPDATE generation.webhook_deliveries d SET status = 'pending', failed_attempts = 0, next_attempt_at = now(), claim = NULL
      WHERE d.delivery_id = $1 AND d.account_id = $2 RETURNING ${COLUMNS}`,
    [deliveryId, accountId],
  );
  return rows[0] ?? null;
}
