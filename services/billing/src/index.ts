// Billing owns the price table, reservations, the append-only ledger (its only writer) and its projections.
// It must not call providers, read other services' tables, or trust an amount a caller sends.
import { fileURLToPath } from "node:url";
import type { Logger } from "@orvado/core";
import { migrate, type Db } from "@orvado/db";
import { BillingService } from "@orvado/proto";
import { BILLING_TOPIC, migrateOutbox, startOutboxRelay, type EventStream } from "@orvado/events";
import { startRpcServer, type RpcServer } from "@orvado/rpc";
import type { BillingConfig } from "./config.ts";
import { loadPriceFile, seedPrices } from "./prices.ts";
import { basename } from "node:path";
import { billingRoutes } from "./rpc.ts";
import { LEDGER_GROUP, startSettlementConsumer, type SettlementObserver } from "./consumer.ts";
import { startHoldSweeper } from "./sweeper.ts";
import { CostLookupLimiter, DEFAULT_COST_LOOKUP_LIMIT } from "./cost-lookup-limit.ts";

export type { BillingConfig } from "./config.ts";
export { loadBillingConfig } from "./config.ts";

export interface RunningBilling {
  rpc: RpcServer;
  stop(): Promise<void>;
}

const MIGRATIONS = fileURLToPath(new URL("../migrations", import.meta.url));
/** The current definition of each of the schema's SQL functions, one per file (re-applied at every start). */
const FUNCTIONS = fileURLToPath(new URL("../sql/functions", import.meta.url));

export async function startBilling(config: BillingConfig, deps: { db: Db; stream: EventStream; logger: Logger; onSettled?: SettlementObserver }): Promise<RunningBilling> {
  const { db, stream, logger } = deps;
  await migrate(db, "billing", MIGRATIONS, FUNCTIONS);
  await migrateOutbox(db, "billing");
  await seedPrices(db, loadPriceFile(config.pricesFile), basename(config.pricesFile));
  const relay = startOutboxRelay({ db, schema: "billing", stream, logger });
  const consumer = await startSettlementConsumer(stream, db, logger, deps.onSettled);
  const sweeper = startHoldSweeper(db, logger, config.sweepIntervalMs);
  const rpc = await startRpcServer({
    host: config.host,
    port: config.port,
    secret: config.internalSecret,
    serviceNames: [BillingService.typeName],
    routes: billingRoutes(db, config.holdTtlMs, relay, new CostLookupLimiter(db, config.costLookupLimit ?? DEFAULT_COST_LOOKUP_LIMIT)),
    logger,
  });
  return {
    rpc,
    async stop() {
      await rpc.close();
      await sweeper.stop();
      await relay.flush();
      await relay.stop();
      await settleWhatIsLogged(stream, logger);
      await consumer.stop();
    },
  };
}

const STOP_SETTLE_TIMEOUT_MS = 5_000;

/**
 * A graceful stop settles the events already in the Postgres log (a job that
 * finished during shutdown is charged now, not at the next start). Kafka keeps
 * them for the group's next consumer, so there is nothing to wait for there.
 */
async function settleWhatIsLogged(stream: EventStream, logger: Logger): Promise<void> {
  if (stream.name !== "postgres") return;
  try {
    await stream.waitForGroup(BILLING_TOPIC, LEDGER_GROUP, { timeoutMs: STOP_SETTLE_TIMEOUT_MS });
  } catch (error) {
    logger.warn({ err: error }, "stopping with events not yet settled; they stay in the log for the next start");
  }
}
