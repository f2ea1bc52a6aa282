import type { Logger } from "@orvado/core";
import type { Admin, PartitionMetadata } from "kafkajs";
import { CLUSTER_SIZED_REPLICATION, type KafkaSettings } from "./kafka-settings.ts";

export interface KafkaTopics {
  /** The topic's name on the cluster, created first (once per process) if it does not exist. */
  ensure(topic: string): Promise<string>;
  /** A consumer group's name on the cluster. */
  groupName(group: string): string;
  /** The partitions of a topic (its name on the cluster), read again once older than PARTITIONS_MAX_AGE_MS. */
  partitions(name: string): Promise<PartitionMetadata[]>;
}

/** How long the partitions the producer groups messages by are trusted: partitions an operator adds are used after this. */
const PARTITIONS_MAX_AGE_MS = 60_000;

/**
 * Orvado's topics on the cluster: named with the settings' prefix, created with
 * its partition count and replication when missing (topicReplication). A topic that already
 * exists is left as the operator made it; fewer partitions than configured is
 * logged, since it caps how many billing processes share the work.
 */
export function kafkaTopics(admin: Admin, settings: KafkaSettings, logger: Logger): KafkaTopics {
  const ensured = new Map<string, Promise<string>>();
  const partitions = new Map<string, { at: number; metadata: Promise<PartitionMetadata[]> }>();
  const nameOf = (topic: string) => `${settings.topicPrefix}${topic}`;

  async function create(name: string): Promise<string> {
    // createTopics answers false, not an error, when the topic already exists.
    const replication = topicReplication(settings.replicationFactor, (await admin.describeCluster()).brokers.length);
    const created = await admin.createTopics({
      topics: [{ topic: name, numPartitions: settings.partitions, ...replication }],
      waitForLeaders: true,
    });
    if (!created) {
      const metadata = await admin.fetchTopicMetadata({ topics: [name] });
      const partitions = metadata.topics[0]?.partitions.length ?? 0;
      if (partitions < settings.partitions) {
        logger.warn({ topic: name, partitions, configured: settings.partitions }, "the topic exists with fewer partitions than KAFKA_TOPIC_PARTITIONS");
      }
    }
    return name;
  }

  return {
    ensure(topic) {
      const name = nameOf(topic);
      let pending = ensured.get(name);
      if (!pending) {
        pending = create(name);
        pending.catch(() => ensured.delete(name));
        ensured.set(name, pending);
      }
      return pending;
    },
    groupName: nameOf,
    partitions(name) {
      const known = partitions.get(name);
      if (known && Date.now() - known.at < PARTITIONS_MAX_AGE_MS) return known.metadata;
      const metadata = admin.fetchTopicMetadata({ topics: [name] }).then((answer) => answer.topics[0]?.partitions ?? []);
      metadata.catch(() => partitions.delete(name));
      partitions.set(name, { at: Date.now(), metadata });
      return metadata;
    },
  };
}

/** The replication a topic is created with, and the in-sync replicas a write with acks=all then needs. */
export interface TopicReplication {
  replicationFactor: number;
  configEntries: { name: string; value: string }[];
}

/**
 * By default (CLUSTER_SIZED_REPLICATION) a topic gets three replicas, or one per broker
 * on a smaller cluster. With three replicas or more, a write is confirmed once two of
 * them have it (min.insync.replicas 2, the producer writing with acks=all): one broker
 * may fail without losing a confirmed event or stopping writes. -1 leaves both to the
 * broker's defaults; another value is the operator's replication, min ISR 2 from three.
 */
export function topicReplication(configured: number, brokers: number): TopicReplication {
  const replicationFactor = configured === CLUSTER_SIZED_REPLICATION ? Math.max(1, Math.min(3, brokers)) : configured;
  const configEntries = replicationFactor >= 3 ? [{ name: "min.insync.replicas", value: "2" }] : [];
  return { replicationFactor, configEntries };
}
