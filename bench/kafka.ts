// The Kafka settings a benchmark run gives Orvado: the brokers of KAFKA_BROKERS,
// a topic and group prefix of the run's own (several runs and the tests share one
// broker), and the services' own defaults for the rest unless KAFKA_TOPIC_PARTITIONS,
// KAFKA_TOPIC_REPLICATION or KAFKA_SESSION_TIMEOUT_MS say otherwise. The producer
// always writes with acks=all and idempotence (libs/events/src/kafka.ts).
import { randomBytes } from "node:crypto";
import { kafkaBrokerAnswers, kafkaSettings, type KafkaSettings } from "@orvado/events";

const PROBE_TIMEOUT_MS = 5_000;

/** The brokers of KAFKA_BROKERS (empty when unset). */
export function benchKafkaBrokers(env: NodeJS.ProcessEnv = process.env): string[] {
  return (env.KAFKA_BROKERS ?? "").split(",").map((broker) => broker.trim()).filter(Boolean);
}

function numberFrom(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const text = env[name];
  if (text === undefined || text === "") return fallback;
  const value = Number(text);
  if (!Number.isInteger(value)) throw new Error(`${name} must be an integer, not ${text}`);
  return value;
}

/** A fresh prefix per call, named so a benchmark's topics are told apart from the tests' (t…) on a shared broker. */
export function benchKafkaPrefix(): string {
  return `bench${Date.now().toString(36)}${randomBytes(3).toString("hex")}.`;
}

export function benchKafkaSettings(brokers: string[], env: NodeJS.ProcessEnv = process.env): KafkaSettings {
  const defaults = kafkaSettings(brokers);
  return {
    ...defaults,
    topicPrefix: benchKafkaPrefix(),
    partitions: numberFrom(env, "KAFKA_TOPIC_PARTITIONS", defaults.partitions),
    replicationFactor: numberFrom(env, "KAFKA_TOPIC_REPLICATION", defaults.replicationFactor),
    sessionTimeoutMs: numberFrom(env, "KAFKA_SESSION_TIMEOUT_MS", defaults.sessionTimeoutMs),
  };
}

/** The environment that gives a service exactly these settings (and no others the parent had). */
export function kafkaEnv(settings: KafkaSettings | undefined): NodeJS.ProcessEnv {
  if (!settings) return { KAFKA_BROKERS: "", KAFKA_TOPIC_PREFIX: "" };
  return {
    KAFKA_BROKERS: settings.brokers.join(","),
    KAFKA_TOPIC_PREFIX: settings.topicPrefix,
    KAFKA_TOPIC_PARTITIONS: String(settings.partitions),
    KAFKA_TOPIC_REPLICATION: String(settings.replicationFactor),
    KAFKA_SESSION_TIMEOUT_MS: String(settings.sessionTimeoutMs),
  };
}

/**
 * Kafka for a benchmark leg, or why there is none: KAFKA_BROKERS unset, or no
 * broker answering there. The caller prints the reason and skips the leg.
 */
export async function benchKafka(env: NodeJS.ProcessEnv = process.env): Promise<{ settings: KafkaSettings } | { skipped: string }> {
  const brokers = benchKafkaBrokers(env);
  if (brokers.length === 0) return { skipped: "KAFKA_BROKERS is not set (npm run kafka:up starts a local broker on 127.0.0.1:9092)" };
  if (!(await kafkaBrokerAnswers(brokers, PROBE_TIMEOUT_MS))) return { skipped: `no Kafka broker answered at ${brokers.join(", ")} within ${PROBE_TIMEOUT_MS / 1000} s` };
  return { settings: benchKafkaSettings(brokers, env) };
}

/** The settings as the reports print them. */
export function describeKafka(settings: KafkaSettings): string {
  const replication =
    settings.replicationFactor === -1 ? "the broker's default replication" : settings.replicationFactor === 0 ? "replication min(3, brokers)" : `replication ${settings.replicationFactor}`;
  return `${settings.brokers.length} broker${settings.brokers.length === 1 ? "" : "s"} (${settings.brokers.join(", ")}), ${settings.partitions} partitions, ${replication}, acks=all, idempotent producer, topic prefix ${settings.topicPrefix}`;
}
