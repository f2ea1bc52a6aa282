import type { Admin } from "kafkajs";
import type { KafkaTopics } from "./kafka-topics.ts";

/**
 * Kafka's side of EventStream.waitForGroup: the topic's end offsets are read
 * once, then the group's committed offsets until every partition has reached
 * its end (a partition the group never committed counts as its start).
 */
export async function waitForKafkaGroup(admin: Admin, topics: KafkaTopics, topic: string, group: string, timeoutMs = 10_000): Promise<void> {
  const name = await topics.ensure(topic);
  const groupId = topics.groupName(group);
  const ends = new Map((await admin.fetchTopicOffsets(name)).map((end) => [end.partition, { high: BigInt(end.high), low: BigInt(end.low) }]));
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const [committed] = await admin.fetchOffsets({ groupId, topics: [name] });
    const at = new Map((committed?.partitions ?? []).map((partition) => [partition.partition, BigInt(partition.offset)]));
    const behind = [...ends].filter(([partition, end]) => end.high > end.low && (at.get(partition) ?? -1n) < end.high);
    if (behind.length === 0) return;
    if (Date.now() >= deadline) {
      const detail = behind.map(([partition, end]) => `partition ${partition} at ${at.get(partition) ?? "none"} of ${end.high}`).join(", ");
      throw new Error(`group ${groupId} has not caught up on ${name} after ${timeoutMs} ms: ${detail}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
