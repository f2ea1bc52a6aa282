// Whether a benchmarked Orvado has finished billing what it answered, on either
// event stream. Holds are rows of billing.cost_records in PostgreSQL whichever
// stream carries the events; once none is pending, billing's ledger group must
// also have committed everything on the billing topic (the Postgres log's
// offsets table, or Kafka's committed offsets), so no consumer work of one
// round runs on into the next target's round.
import { createLogger } from "@orvado/core";
import { openDb, type Db } from "@orvado/db";
import { BILLING_TOPIC, openEventStream, waitForGroup, type EventStream } from "@orvado/events";
import { LEDGER_GROUP } from "../services/billing/src/consumer.ts";
import { settledCharges, waitUntilSettled, type Charges, type SettlementBacklog } from "./ledger-check.ts";
import type { OrvadoInfo } from "./servers.ts";

const GROUP_TIMEOUT_MS = 120_000;

export interface Settlement {
  /** Waits until no hold is pending and the ledger group has caught up; says what was left and how long it took. */
  untilSettled(): Promise<SettlementBacklog>;
  /** The totals once every hold has settled. */
  charges(): Promise<Charges>;
  close(): Promise<void>;
}

/** On the Postgres log the offsets are read with plain queries: no LISTEN connection is added to the measured database. */
function groupWaiter(db: Db, stream: EventStream | null): () => Promise<void> {
  return stream
    ? () => stream.waitForGroup(BILLING_TOPIC, LEDGER_GROUP, { timeoutMs: GROUP_TIMEOUT_MS })
    : () => waitForGroup(db, BILLING_TOPIC, LEDGER_GROUP, { timeoutMs: GROUP_TIMEOUT_MS, intervalMs: 50 });
}

export async function watchSettlement(info: OrvadoInfo): Promise<Settlement> {
  const db = await openDb(info.databaseUrl, { maxConnections: 1 });
  // With Kafka settings the stream uses the brokers only, not db.
  const stream = info.kafka ? await openEventStream({ db, logger: createLogger("bench-settlement", "warn"), kafka: info.kafka, clientId: "orvado-bench" }) : null;
  const groupCaughtUp = groupWaiter(db, stream);
  return {
    async untilSettled() {
      const started = Date.now();
      const holds = await waitUntilSettled(info.databaseUrl);
      await groupCaughtUp();
      return { pendingAtEnd: holds.pendingAtEnd, drainedMs: Date.now() - started };
    },
    charges: () => settledCharges(info.databaseUrl),
    async close() {
      await stream?.close();
      await db.close();
    },
  };
}
