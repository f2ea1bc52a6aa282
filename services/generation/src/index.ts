// Generation owns the model catalog, size and tier rules, channel capacity and circuit breakers (shared by
// its replicas in PostgreSQL), the job lifecycle and image storage.
// It must not write the ledger or read billing's tables: it reserves through billing's RPC and reports by event.
import { fileURLToPath } from "node:url";
import { GENERATION_RPC_READ_MAX_BYTES, type Logger } from "@orvado/core";
import { migrate, type Db } from "@orvado/db";
import { BillingService, GenerationService, WebhookService } from "@orvado/proto";
import { migrateOutbox, startOutboxRelay, type EventStream } from "@orvado/events";
import { internalClient, startRpcServer, type RpcServer } from "@orvado/rpc";
import type { GenerationConfig } from "./config.ts";
import { loadCatalog } from "./catalog.ts";
import { loadCatalogModules } from "./catalog-modules.ts";
import { checkCatalogPrices } from "./catalog-prices.ts";
import { boundOpenBreakers } from "./channel-slots.ts";
import { JobRunner } from "./jobs.ts";
import { generationRoutes } from "./rpc.ts";
import { openImageStore } from "./storage/open-store.ts";
import { GenerationMetrics } from "./metrics.ts";
import { FILE_SWEEP_INTERVAL_MS, startFileSweeper } from "./file-sweeper.ts";
import { startOrphanSweeper } from "./orphan-jobs.ts";
import { startWebhookSender, type WebhookSender } from "./webhooks/sender.ts";
import { webhookRoutes } from "./webhooks/rpc.ts";

export type { GenerationConfig } from "./config.ts";
export { loadGenerationConfig } from "./config.ts";
export { openImageStore } from "./storage/open-store.ts";
export type { ImageStore } from "./storage/store.ts";

export interface RunningGeneration {
  rpc: RpcServer;
  jobs: JobRunner;
  metrics: GenerationMetrics;
  webhooks: WebhookSender;
  stop(): Promise<void>;
}

const MIGRATIONS = fileURLToPath(new URL("../migrations", import.meta.url));
/** The current definition of each of the schema's SQL functions, one per file (re-applied at every start). */
const FUNCTIONS = fileURLToPath(new URL("../sql/functions", import.meta.url));

export async function startGeneration(
  config: GenerationConfig,
  deps: { db: Db; stream: EventStream; logger: Logger },
): Promise<RunningGeneration> {
  const { db, stream, logger } = deps;
  await migrate(db, "generation", MIGRATIONS, FUNCTIONS);
  await migrateOutbox(db, "generation");
  const catalog = loadCatalog(config.modelsFile);
  const billing = internalClient(BillingService, config.billingUrls, config.internalSecret, { transport: config.rpcTransport });
  // Before anything runs: a tier without a price refuses the start (catalog-prices.ts).
  await checkCatalogPrices(catalog, billing, logger);
  // A breaker opened before this start stays open no longer than its cool-down from its opening (channel-slots.ts).
  await boundOpenBreakers(db, config.breakerCooldownMs);
  await loadCatalogModules(catalog);
  const store = await openImageStore(config.storage);
  const metrics = new GenerationMetrics();
  const relay = startOutboxRelay({ db, schema: "generation", stream, logger });
  const jobs = new JobRunner({ db, billing, store, relay, catalog, config, logger, metrics });
  metrics.watchAnswers(() => ({ waiting: jobs.answerGate.waiting, ...jobs.answerGate.held }));
  metrics.watchCapacity(function* () {
    // Keys are `<model>/<channel>`; model ids never contain a slash.
    for (const [key, capacity] of jobs.capacities) {
      const cut = key.indexOf("/");
      yield { model: key.slice(0, cut), channel: key.slice(cut + 1), inUse: capacity.inUse, limit: capacity.limit };
    }
  });
  const stopSweeper = startFileSweeper({ db, store, logger: logger.child({ component: "file-sweeper" }) }, FILE_SWEEP_INTERVAL_MS);
  const stopOrphanSweeper = startOrphanSweeper({
    db,
    logger: logger.child({ component: "orphan-jobs" }),
    olderThanMs: config.jobTimeoutMs + config.orphanGraceMs,
    intervalMs: config.orphanSweepIntervalMs,
    onFailed: () => relay.poke(),
  });
  // Sends the deliveries job outcomes record (webhooks/sender.ts), off every request's path.
  const webhooks = startWebhookSender({
    db,
    billing,
    config: config.webhooks,
    urlSigningSecret: config.urlSigningSecret,
    logger: logger.child({ component: "webhooks" }),
    onAttempt: (result) => metrics.webhookAttempt(result),
  });
  const rpc = await startRpcServer({
    host: config.host,
    port: config.port,
    secret: config.internalSecret,
    serviceNames: [GenerationService.typeName, WebhookService.typeName],
    routes: (router) => {
      generationRoutes({ db, catalog, jobs, store, metrics, urlSigningSecret: config.urlSigningSecret, logger })(router);
      webhookRoutes({ db, allowPrivateUrls: config.webhooks.allowPrivateUrls })(router);
    },
    logger,
    // An image edit carries its uploads in the CreateImage message: bounded, not Connect's 4 GiB.
    readMaxBytes: GENERATION_RPC_READ_MAX_BYTES,
  });
  return {
    rpc,
    jobs,
    metrics,
    webhooks,
    async stop() {
      // Calls in flight keep their streams; jobs run to the end and their events leave the outbox.
      const closed = rpc.close();
      await jobs.drain();
      await closed;
      await relay.flush();
      await relay.stop();
      // Attempts in flight finish (each within WEBHOOK_TIMEOUT_MS); a delivery not yet sent stays due for the next start.
      await webhooks.stop();
      await stopSweeper();
      await stopOrphanSweeper();
      await store.close?.();
    },
  };
}
