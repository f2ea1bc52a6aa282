// After a run: what billing recorded for the benchmark accounts, read straight
// from the PostgreSQL database the Orvado process uses (before it is dropped).
import pg from "pg";

export interface Charges {
  /** Requests captured (charged) in the ledger. */
  charged: number;
  /** Holds not yet settled. */
  pending: number;
  /** Settled without a charge (failed, expired). */
  notCharged: number;
  capturedMicros: bigint;
}

async function readCharges(client: pg.Client): Promise<Charges> {
  const result = await client.query<{ charged: string; pending: string; not_charged: string; captured: string }>(
    `SELECT count(*) FILTER (WHERE captured_micros > 0) AS charged,
            count(*) FILTER (WHERE settled_by IS NULL) AS pending,
            count(*) FILTER (WHERE settled_by IS NOT NULL AND captured_micros = 0) AS not_charged,
            coalesce(sum(captured_micros), 0) AS captured
       FROM billing.cost_records`,
  );
  const row = result.rows[0]!;
  return { charged: Number(row.charged), pending: Number(row.pending), notCharged: Number(row.not_charged), capturedMicros: BigInt(row.captured) };
}

/** Waits (up to timeoutMs) for every hold to settle, then returns the totals over all accounts. */
export async function settledCharges(databaseUrl: string, timeoutMs = 120_000): Promise<Charges> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const deadline = Date.now() + timeoutMs;
    let charges = await readCharges(client);
    while (charges.pending > 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 500));
      charges = await readCharges(client);
    }
    return charges;
  } finally {
    await client.end();
  }
}

/** What a timed round left for billing to settle once its load stopped, and how long that took. */
export interface SettlementBacklog {
  /** Holds not yet settled when the round ended. */
  pendingAtEnd: number;
  /** From the round's end until none was pending (polled every 50 ms). */
  drainedMs: number;
}

/**
 * Waits until billing has settled every hold. Run between rounds, so work a target
 * deferred past its own timed window (settling the requests it answered) is not
 * done during the next target's round, where it would slow that target instead.
 */
export async function waitUntilSettled(databaseUrl: string, timeoutMs = 120_000): Promise<SettlementBacklog> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const started = Date.now();
    const pendingAtEnd = (await readCharges(client)).pending;
    let pending = pendingAtEnd;
    while (pending > 0 && Date.now() - started < timeoutMs) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      pending = (await readCharges(client)).pending;
    }
    return { pendingAtEnd, drainedMs: Date.now() - started };
  } finally {
    await client.end();
  }
}
