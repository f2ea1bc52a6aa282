import { randomBytes } from "node:crypto";

// Which event stream a test run uses. vitest.config.ts runs the Kafka suites a
// second time, in the project "kafka", with ORVADO_TEST_STREAM=kafka and the
// brokers of KAFKA_BROKERS; everything else runs on the Postgres log.

/** True in the "kafka" project: suites that can run on either stream use Kafka. */
export function testRunsOnKafka(env: NodeJS.ProcessEnv = process.env): boolean {
  return env.ORVADO_TEST_STREAM === "kafka";
}

/** KAFKA_BROKERS as a list (empty when unset). */
export function testKafkaBrokers(env: NodeJS.ProcessEnv = process.env): string[] {
  return (env.KAFKA_BROKERS ?? "").split(",").map((broker) => broker.trim()).filter(Boolean);
}

/**
 * A topic and group prefix no other test uses. Test files share one broker and
 * run in parallel: without it, one file's billing would join another's group
 * and settle (or skip) its events.
 */
export function uniqueKafkaPrefix(): string {
  return `t${randomBytes(5).toString("hex")}.`;
}
