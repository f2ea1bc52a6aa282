import { KafkaContainer } from "@testcontainers/kafka";
import { PostgreSqlContainer } from "@testcontainers/postgresql";
import { SINGLE_NODE_SETTINGS } from "@orvado/kafka-local/broker-config";
import type { TestProject } from "vitest/node";
import type { TestServicesPlan } from "./test-services.ts";

// vitest's globalSetup where Docker answers and TEST_DATABASE_URL or
// KAFKA_BROKERS is unset (vitest.config.ts adds it only then). It starts what
// the plan puts in a container, exports the addresses to the test processes
// (vitest forks them after global setup, with this process's env) and stops the
// containers at teardown. Testcontainers' reaper also removes them if this
// process dies first.

declare module "vitest" {
  export interface ProvidedContext {
    /** The plan vitest.config.ts made when it loaded; this setup follows it rather than asking Docker again. */
    testServices: TestServicesPlan;
  }
}

export const POSTGRES_IMAGE = "postgres:16";
/**
 * Confluent's build of Apache Kafka 4.1 (Confluent Platform 8.1), KRaft only:
 * @testcontainers/kafka drives Confluent's images and cannot start apache/kafka.
 * CI's broker is Apache Kafka 4.1.1 (tools/kafka-local).
 */
export const KAFKA_IMAGE = "confluentinc/cp-kafka:8.1.1";
/** The listener @testcontainers/kafka maps for clients outside Docker. */
const KAFKA_CLIENT_PORT = 9093;

interface Stoppable {
  stop(): Promise<unknown>;
}

export default async function startTestContainers(project: TestProject): Promise<() => Promise<void>> {
  const plan = project.getProvidedContext().testServices;
  const starts: Promise<Stoppable>[] = [];
  if (plan.postgres.source === "container") starts.push(startPostgres());
  if (plan.kafka.source === "container") starts.push(startKafka());

  // Both at once (the broker takes longest); if one fails, stop the other before failing the run.
  const results = await Promise.allSettled(starts);
  const started = results.flatMap((result) => (result.status === "fulfilled" ? [result.value] : []));
  const failure = results.find((result): result is PromiseRejectedResult => result.status === "rejected");
  if (failure) {
    await stopAll(started);
    throw failure.reason;
  }
  return () => stopAll(started);
}

async function startPostgres(): Promise<Stoppable> {
  const container = await new PostgreSqlContainer(POSTGRES_IMAGE).start();
  // A server URL: freshDatabase() creates each test file's databases on it.
  process.env.TEST_DATABASE_URL = container.getConnectionUri();
  console.log(`test services: PostgreSQL in a container (${POSTGRES_IMAGE}) at ${container.getHost()}:${container.getPort()}`);
  return container;
}

async function startKafka(): Promise<Stoppable> {
  const container = await new KafkaContainer(KAFKA_IMAGE).withEnvironment(kafkaContainerEnvironment(SINGLE_NODE_SETTINGS)).start();
  process.env.KAFKA_BROKERS = `${container.getHost()}:${container.getMappedPort(KAFKA_CLIENT_PORT)}`;
  console.log(`test services: Kafka in a container (${KAFKA_IMAGE}) at ${process.env.KAFKA_BROKERS}`);
  return container;
}

async function stopAll(containers: Stoppable[]): Promise<void> {
  await Promise.allSettled(containers.map((container) => container.stop()));
}

/**
 * Broker properties as the environment Confluent's image turns back into
 * server.properties: KAFKA_ + the name in capitals, "_" as "__", "-" as "___"
 * and "." as "_" (in that order, so the underscores written for one are not
 * taken for another).
 */
export function kafkaContainerEnvironment(settings: readonly (readonly [string, string | number])[]): Record<string, string> {
  const environment: Record<string, string> = {};
  for (const [name, value] of settings) {
    const key = name.replaceAll("_", "__").replaceAll("-", "___").replaceAll(".", "_").toUpperCase();
    environment[`KAFKA_${key}`] = String(value);
  }
  return environment;
}
