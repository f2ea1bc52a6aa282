// The stack an end-to-end suite runs against, on the stream of its test project:
// in "embedded" the whole set in this process on the Postgres log; in "kafka"
// the four services as separate processes (their bundles) on PostgreSQL and a
// Kafka broker, as production runs them. Tests reach both only over HTTP, Connect
// RPC and the database; the services call each other in-process in "embedded"
// (libs/rpc in-process.ts) and over HTTP/2 in "kafka".
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDb, type Db } from "@orvado/db";
import { freshDatabase, testKafkaBrokers, testRunsOnKafka, uniqueKafkaPrefix } from "@orvado/testkit";
import { startTestStack, TEST_ADMIN } from "./harness.ts";
import { ProcessStack } from "./process-stack.ts";

export interface E2eStack {
  /** Which stream carries the billing events (a test's name says it). */
  streamName: "postgres" | "kafka";
  edgeUrl: string;
  authUrl: string;
  billingUrl: string;
  generationUrl: string;
  internalSecret: string;
  /** The stack's database, for assertions on its rows. */
  db: Db;
  dataDir: string;
  close(): Promise<void>;
}

export async function startE2eStack(extraEnv: NodeJS.ProcessEnv = {}): Promise<E2eStack> {
  if (!testRunsOnKafka()) {
    const stack = await startTestStack(extraEnv);
    return { ...stack, streamName: "postgres" };
  }
  return startProcessesOnKafka(extraEnv);
}

/** The services as processes on Kafka, with a topic and groups of their own on the shared broker. */
export async function startProcessesOnKafka(extraEnv: NodeJS.ProcessEnv = {}, options: { topicPrefix?: string } = {}): Promise<E2eStack & { processes: ProcessStack; topicPrefix: string }> {
  const brokers = testKafkaBrokers();
  if (brokers.length === 0) throw new Error("the kafka test project needs KAFKA_BROKERS (npm run kafka:up)");
  if (!process.env.TEST_DATABASE_URL) throw new Error("the kafka test project needs PostgreSQL (TEST_DATABASE_URL): separate processes cannot share PGlite");
  const database = await freshDatabase();
  const dataDir = mkdtempSync(join(tmpdir(), "orvado-kafka-"));
  const topicPrefix = options.topicPrefix ?? uniqueKafkaPrefix();
  const processes = await ProcessStack.start({
    databaseUrl: database.url,
    dataDir,
    env: {
      KAFKA_BROKERS: brokers.join(","),
      KAFKA_TOPIC_PREFIX: topicPrefix,
      // A killed member's partitions move after 6 s, Kafka's shortest session.
      KAFKA_SESSION_TIMEOUT_MS: "6000",
      ORVADO_ADMIN_EMAIL: TEST_ADMIN.email,
      ORVADO_ADMIN_PASSWORD: TEST_ADMIN.password,
      // The suites poll cost records from 127.0.0.1; the lookup limit has its own test.
      BILLING_COST_LOOKUP_MAX_PER_WINDOW: "1000000",
      ...extraEnv,
    },
  });
  const db = await openDb(database.url, { maxConnections: 4 });
  return {
    streamName: "kafka",
    processes,
    topicPrefix,
    edgeUrl: processes.url("edge"),
    authUrl: processes.url("auth"),
    billingUrl: processes.url("billing"),
    generationUrl: processes.url("generation"),
    internalSecret: processes.secret,
    db,
    dataDir,
    async close() {
      await processes.stop();
      await db.close();
      await database.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
