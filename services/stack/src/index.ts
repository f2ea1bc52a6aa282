// The stack starts auth, billing, generation and the edge together, each on its own loopback port
// (their calls to each other skip the socket: @orvado/rpc in-process.ts). It owns no data and no rules.
import { join } from "node:path";
import { checkSettingsAgree, createLogger, timingsFrom, type Logger } from "@orvado/core";
import { openDb, poolMaxFromEnv, type Db } from "@orvado/db";
import { openEventStream, type EventStream } from "@orvado/events";
import { loadAuthConfig, startAuth } from "@orvado/auth";
import { loadBillingConfig, startBilling } from "@orvado/billing";
import { loadGenerationConfig, startGeneration, type RunningGeneration } from "@orvado/generation";
import { loadEdgeConfig, startEdge } from "@orvado/edge";
import { loadStackConfig } from "./config.ts";
import { loadOrCreateSecrets } from "./secrets.ts";

export interface RunningStack {
  edgeUrl: string;
  authUrl: string;
  billingUrl: string;
  generationUrl: string;
  internalSecret: string;
  db: Db;
  stream: EventStream;
  /** The brokers the stream uses; empty on the Postgres log. */
  kafkaBrokers: string[];
  generation: RunningGeneration;
  /** Stops taking requests, lets every job in flight finish and be billed, then closes. */
  stop(): Promise<void>;
}

/** What the start banner says of the event stream: Kafka's brokers, or the Postgres log. */
export function streamDescription(stack: Pick<RunningStack, "stream" | "kafkaBrokers">): string {
  return stack.stream.name === "kafka"
    ? `Kafka at ${stack.kafkaBrokers.join(", ")} (KAFKA_BROKERS)`
    : "the Postgres log in the database (set KAFKA_BROKERS to use Kafka)";
}

export interface StackOptions {
  /** Environment the services' config modules read (default process.env). */
  env?: NodeJS.ProcessEnv;
  logger?: Logger;
}

export async function startStack(options: StackOptions = {}): Promise<RunningStack> {
  const baseEnv = options.env ?? process.env;
  // Every service's settings are known here: refuse a combination that permits overdraft before anything starts.
  checkSettingsAgree(timingsFrom({}, baseEnv));
  const logger = options.logger ?? createLogger("orvado", baseEnv.LOG_LEVEL ?? "info");
  const stack = loadStackConfig(baseEnv);
  const secrets = loadOrCreateSecrets(stack.dataDir, { internalSecret: stack.internalSecret, urlSigningSecret: stack.urlSigningSecret });
  let env: NodeJS.ProcessEnv = {
    GENERATION_IMAGE_DIR: join(stack.dataDir, "images"),
    ...baseEnv,
    DATABASE_URL: stack.databaseUrl,
    ORVADO_INTERNAL_SECRET: secrets.internalSecret,
    ORVADO_URL_SIGNING_SECRET: secrets.urlSigningSecret,
  };
  // One pool serves all four services here, so it gets the share of four processes' worth (20 by default).
  const db = await openDb(stack.databaseUrl, { maxConnections: baseEnv.DATABASE_POOL_MAX ? poolMaxFromEnv(baseEnv) : 20 });
  const stream = await openEventStream({ db, logger: logger.child({ component: "stream" }), kafka: stack.kafka });
  // A service that refuses to start (a models file tier without a price, say) stops those started before it.
  const started: { stop(): Promise<void> }[] = [];
  const startNext = async <T extends { stop(): Promise<void> }>(start: () => Promise<T>): Promise<T> => {
    try {
      const service = await start();
      started.unshift(service);
      return service;
    } catch (error) {
      for (const service of started) await service.stop();
      await stream.close();
      await db.close();
      throw error;
    }
  };
  const auth = await startNext(() => startAuth(loadAuthConfig(env), { db, logger: logger.child({ service: "auth" }) }));
  const billing = await startNext(() => startBilling(loadBillingConfig(env), { db, stream, logger: logger.child({ service: "billing" }) }));
  env = { ...env, ORVADO_BILLING_URL: billing.rpc.url, ORVADO_AUTH_URL: auth.rpc.url };
  const generation = await startNext(() => startGeneration(loadGenerationConfig(env), { db, stream, logger: logger.child({ service: "generation" }) }));
  env = { ...env, ORVADO_GENERATION_URL: generation.rpc.url };
  const edge = await startNext(() => startEdge(loadEdgeConfig(env), { logger: logger.child({ service: "edge" }) }));
  // Without ORVADO_PUBLIC_URL, webhook bodies link images at this edge's own address.
  generation.webhooks.setLinkBase(edge.url);
  return {
    edgeUrl: edge.url,
    authUrl: auth.rpc.url,
    billingUrl: billing.rpc.url,
    generationUrl: generation.rpc.url,
    internalSecret: secrets.internalSecret,
    db,
    stream,
    kafkaBrokers: stack.kafka.brokers,
    generation,
    async stop() {
      await edge.stop();
      await generation.stop();
      await billing.stop();
      await auth.stop();
      await stream.close();
      await db.close();
    },
  };
}

