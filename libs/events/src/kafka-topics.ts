import type { Logger } from "@orvado/core";
import type { Admin } from "kafkajs";
import type { KafkaSettings } from "./kafka-settings.ts";

export interface KafkaTopics {
  /** The topic's name on the cluster, created first (once per process) if it does not exist. */
  ensure(topic: string): Promise<string>;
  /** A consumer group's name on the cluster. */
  groupName(group: string): string;
}

/**
 * Orvado's topics on the cluster: named with the settings' prefix, created with
 * its partition count and replication when missing. A topic that already
 * exists is left as the operator made it; fewer partitions than configured is
 * logged, since it caps how many billing processes share the work.
 */
export function kafkaTopics(admin: Admin, settings: KafkaSettings, logger: Logger): KafkaTopics {
  const ensured = new Map<string, Promise<string>>();
  const nameOf = (topic: string) => `${settings.topicPrefix}${topic}`;

  async function create(name: string): Promise<string> {
    // createTopics answers false, not an error, when the topic already exists.
    const created = await admin.createTopics({
      topics: [{ topic: name, numPartitions: settings.partitions, replicationFactor: settings.replicationFactor }],
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
  };
}
