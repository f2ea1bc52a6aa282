import kafkajs from "kafkajs";
import type { PartitionMetadata } from "kafkajs";

const { Partitioners } = kafkajs;

/**
 * Messages grouped by the partition kafkajs's DefaultPartitioner gives their key (murmur2,
 * as the Java client), each group in publish order, partitions in order of first use.
 *
 * Why the producer sends one partition at a time: kafkajs 2.2.4 remembers, across the
 * retries of one send(), which brokers have answered, by broker. When a partition's
 * leader dies mid-send and its new leader is a broker that had already answered for
 * other partitions, the retry never sends that partition's messages to it, and send()
 * resolves as if they had been written: they are lost, and the outbox has deleted its
 * rows (tulios/kafkajs#1303, open; a fix is proposed in tulios/kafkajs#1798). A send()
 * with a single partition has a single leader to answer, and a retry goes to the new one.
 */
export function groupByPartition<M extends { key: string }>(topic: string, messages: M[], partitionMetadata: PartitionMetadata[]): Map<number, M[]> {
  const partitionOf = Partitioners.DefaultPartitioner();
  const groups = new Map<number, M[]>();
  for (const message of messages) {
    const partition = partitionOf({ topic, partitionMetadata, message: { key: message.key, value: null } });
    const group = groups.get(partition);
    if (group) group.push(message);
    else groups.set(partition, [message]);
  }
  return groups;
}
