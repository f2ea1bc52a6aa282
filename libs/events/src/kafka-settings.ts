import { z } from "zod";
import { commaListSchema } from "@orvado/core";

// Kafka's legal topic characters; the prefix also names groups.
const TOPIC_PREFIX = /^[A-Za-z0-9._-]{0,100}$/;

/** KAFKA_TOPIC_REPLICATION's default: min(3, the brokers in the cluster) replicas (kafka-topics.ts). */
export const CLUSTER_SIZED_REPLICATION = 0;

export const kafkaEnvShape = {
  KAFKA_BROKERS: commaListSchema,
  KAFKA_TOPIC_PREFIX: z.string().regex(TOPIC_PREFIX, "letters, digits, '.', '_' and '-' only (at most 100)").default(""),
  KAFKA_TOPIC_PARTITIONS: z.coerce.number().int().min(1).max(10_000).default(3),
  KAFKA_TOPIC_REPLICATION: z.coerce
    .number()
    .int()
    .refine((value) => value === -1 || (value >= 0 && value <= 32), "0 (by the cluster's size), -1 (the broker's default) or 1 to 32")
    .default(CLUSTER_SIZED_REPLICATION),
  // Kafka's group.min.session.timeout.ms is 6 s and group.max.session.timeout.ms 30 min by default.
  KAFKA_SESSION_TIMEOUT_MS: z.coerce.number().int().min(6_000).max(1_800_000).default(30_000),
};

/** The Kafka variables parsed; a service's schema spreads kafkaEnvShape and passes its parsed env to kafkaSettingsFromEnv. */
type KafkaEnv = z.output<z.ZodObject<typeof kafkaEnvShape>>;

/**
 * How a service reaches Kafka and what the topics it creates look like
 * (docs/events.md, "Kafka"). Every service that opens the stream reads the
 * same variables; only KAFKA_BROKERS is needed.
 */
export function kafkaSettingsFromEnv(env: KafkaEnv) {
  return {
    /** Empty: no Kafka, the Postgres log is used. */
    brokers: env.KAFKA_BROKERS,
    /**
     * Put before every topic and consumer-group name, so several Orvado
     * installations (or test runs) can share one cluster without seeing each
     * other's events. Empty by default: the topic is `orvado.billing.v1`.
     */
    topicPrefix: env.KAFKA_TOPIC_PREFIX,
    /** Partitions of a topic Orvado creates (the billing topic is keyed by account). */
    partitions: env.KAFKA_TOPIC_PARTITIONS,
    /** Replicas of a topic Orvado creates: 0 for min(3, brokers), -1 for the broker's default.replication.factor. */
    replicationFactor: env.KAFKA_TOPIC_REPLICATION,
    /** A group member that sends no heartbeat for this long is dropped and its partitions reassigned. */
    sessionTimeoutMs: env.KAFKA_SESSION_TIMEOUT_MS,
  };
}

const kafkaEnvSchema = z.object(kafkaEnvShape).transform(kafkaSettingsFromEnv);

/** The settings the Kafka variables give (kafkaEnvShape, read by kafkaSettingsFromEnv). */
export type KafkaSettings = z.output<typeof kafkaEnvSchema>;

/** The settings with defaults for everything but the brokers (tests, benchmarks). */
export function kafkaSettings(brokers: string[], overrides: Partial<Omit<KafkaSettings, "brokers">> = {}): KafkaSettings {
  return { ...kafkaEnvSchema.parse({}), brokers, ...overrides };
}
