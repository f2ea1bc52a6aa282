// Billing owns the price table, reservations, the append-only ledger (its only writer) and its projections.
// It must not call providers, read other services' tables, or trust an amount a caller sends.
import { fileURLToPath } from "node:url";
import type { Logger } from "@orvado/core";
import { migrate, type Db } from "@orvado/db";
import { BillingService } from "@orvado/proto";
import { migrateOutbox, startOutboxRelay, type EventStream } from "@orvado/events";
import { startRpcServer, type RpcServer } from "@orvado/rpc";
import type { BillingConfig } from "./config.ts";
import { loadPriceFile, seedPrices } from "./prices.ts";
import { basename } from "node:path";
import { billingRoutes } from "./rpc.ts";
import { startSettlementConsumer, type SettlementObserver } from "./consumer.ts";
import { startHoldSweeper } from "./sweeper.ts";

export type { BillingConfig } from "./config.ts";
export { loadBillingConfig } from "./config.ts";

export interface RunningBilling {
  rpc: RpcServer;
  stop(): Promise<void>;
}

const MIGRATIONS = fileURLToPath(new URL("../migrations", import.meta.url));

export async function startBilling(config: BillingConfig, deps: { db: Db; stream: EventStream; logger: Logger; onSettled?: SettlementObserver }): Promise<RunningBilling> {
  const { db, stream, logger } = deps;
  await migrate(db, "billing", MIGRATIONS);
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
    routes: billingRoutes(db, config.holdTtlMs, relay),
    logger,
  });
  return {
    rpc,
    async stop() {
      await rpc.close();
      await sweeper.stop();
      await relay.flush();
      await relay.stop();
      await consumer.stop();
    },
  };
}
