import { randomUUID } from "node:crypto";
import { fromBinary } from "@bufbuild/protobuf";
import kafkajs, { type Admin } from "kafkajs";
import { BillingEventSchema, type BillingEvent } from "@orvado/proto";

// Reading Orvado's billing topic from the outside, as an analyst's consumer would
// (kafkajs, not Orvado's own stream): who leads its partitions, how far a consumer
// group is behind, and every event on it. Each check makes a new client: kafkajs's
// admin keeps asking a leader it cached, also after that broker died.

const newKafka = (brokers: string[]) => new kafkajs.Kafka({ brokers, clientId: "orvado-fault-audit", logLevel: kafkajs.logLevel.NOTHING });

async function withAdmin<T>(brokers: string[], use: (admin: Admin) => Promise<T>): Promise<T> {
  const admin = newKafka(brokers).admin();
  await admin.connect();
  try {
    return await use(admin);
  } finally {
    await admin.disconnect();
  }
}

/** The broker (node id) leading each partition of the topic, by partition. */
export function partitionLeaders(brokers: string[], topic: string): Promise<Map<number, number>> {
  return withAdmin(brokers, async (admin) => {
    const metadata = await admin.fetchTopicMetadata({ topics: [topic] });
    return new Map(metadata.topics[0]!.partitions.map((partition) => [partition.partitionId, partition.leader]));
  });
}

/** Messages the group has not committed yet, over all partitions (a partition it never committed counts from its start). */
export function groupLag(brokers: string[], topic: string, groupId: string): Promise<bigint> {
  return withAdmin(brokers, async (admin) => {
    const ends = await admin.fetchTopicOffsets(topic);
    const [committed] = await admin.fetchOffsets({ groupId, topics: [topic] });
    const at = new Map((committed?.partitions ?? []).map((partition) => [partition.partition, BigInt(partition.offset)]));
    return ends.reduce((lag, end) => {
      const offset = at.get(end.partition) ?? -1n;
      const from = offset < 0n ? BigInt(end.low) : offset;
      return lag + (BigInt(end.high) > from ? BigInt(end.high) - from : 0n);
    }, 0n);
  });
}

/**
 * Every event on the topic, from the beginning to the end offsets it has when called,
 * decoded as docs/events.md describes (protobuf BillingEvent), by a consumer group of its own.
 */
export async function readBillingEvents(brokers: string[], topic: string, timeoutMs = 120_000): Promise<BillingEvent[]> {
  const ends = await withAdmin(brokers, (admin) => admin.fetchTopicOffsets(topic));
  const remaining = new Map(ends.filter((end) => BigInt(end.high) > BigInt(end.low)).map((end) => [end.partition, BigInt(end.high)]));
  const events: BillingEvent[] = [];
  if (remaining.size === 0) return events;
  const consumer = newKafka(brokers).consumer({ groupId: `orvado-fault-audit-${randomUUID()}` });
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the topic was not read to its end within ${timeoutMs} ms: ${JSON.stringify([...remaining].map(String))}`)), timeoutMs);
      consumer
        .run({
          eachMessage: async ({ partition, message }) => {
            if (message.value) events.push(fromBinary(BillingEventSchema, message.value));
            const end = remaining.get(partition);
            if (end !== undefined && BigInt(message.offset) + 1n >= end) remaining.delete(partition);
            if (remaining.size === 0) {
              clearTimeout(timer);
              resolve();
            }
          },
        })
        .catch(reject);
    });
  } finally {
    await consumer.disconnect();
  }
  return events;
}
