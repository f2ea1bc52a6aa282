// Generation owns the model catalog, size and tier rules, the job lifecycle and image storage.
// It must not write the ledger or read billing's tables: it reserves through billing's RPC and reports by event.
import { fileURLToPath } from "node:url";
import type { Logger } from "@orvado/core";
import { migrate, type Db } from "@orvado/db";
import { BillingService, GenerationService } from "@orvado/proto";
import { migrateOutbox, startOutboxRelay, type EventStream } from "@orvado/events";
import { internalClient, startRpcServer, type RpcServer } from "@orvado/rpc";
import type { GenerationConfig } from "./config.ts";
import { loadCatalog } from "./catalog.ts";
import { JobRunner } from "./jobs.ts";
import { generationRoutes } from "./rpc.ts";
import { LocalImageStore } from "./storage/local-store.ts";

export type { GenerationConfig } from "./config.ts";
export { loadGenerationConfig } from "./config.ts";

export interface RunningGeneration {
  rpc: RpcServer;
  jobs: JobRunner;
  stop(): Promise<void>;
}

const MIGRATIONS = fileURLToPath(new URL("../migrations", import.meta.url));

export async function startGeneration(
  config: GenerationConfig,
  deps: { db: Db; stream: EventStream; logger: Logger },
): Promise<RunningGeneration> {
  const { db, stream, logger } = deps;
  await migrate(db, "generation", MIGRATIONS);
  await migrateOutbox(db, "generation");
  const catalog = loadCatalog(config.modelsFile);
  const store = new LocalImageStore(config.imageDir);
  const relay = startOutboxRelay({ db, schema: "generation", stream, logger });
  const billing = internalClient(BillingService, config.billingUrl, config.internalSecret);
  const jobs = new JobRunner({ db, billing, store, relay, catalog, config, logger });
  const rpc = await startRpcServer({
    host: config.host,
    port: config.port,
    secret: config.internalSecret,
    serviceNames: [GenerationService.typeName],
    routes: generationRoutes({ db, catalog, jobs, store, urlSigningSecret: config.urlSigningSecret }),
    logger,
  });
  return {
    rpc,
    jobs,
    async stop() {
      // Calls in flight keep their streams; jobs run to the end and their events leave the outbox.
      const closed = rpc.close();
      await jobs.drain();
      await closed;
      await relay.flush();
      await relay.stop();
    },
  };
}
