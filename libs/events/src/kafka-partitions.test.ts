import { describe, expect, it } from "vitest";
import type { PartitionMetadata } from "kafkajs";
import { groupByPartition } from "./kafka-partitions.ts";

// The producer's grouping of one publish into single-partition sends (no broker:
// tools/kafka-local/src/cluster.kafka.test.ts publishes across a leader's kill on a real cluster).

const partitions = (count: number): PartitionMetadata[] =>
  Array.from({ length: count }, (_, partitionId) => ({ partitionId, leader: partitionId % 3, replicas: [], isr: [], partitionErrorCode: 0, offlineReplicas: [] }));

describe("groupByPartition", () => {
  it("puts one account's events in one group, in publish order, whatever the leaders", () => {
    const messages = Array.from({ length: 60 }, (_, index) => ({ key: `acct_${index % 7}`, id: `event-${index}` }));
    const groups = groupByPartition("orvado.billing.v1", messages, partitions(3));
    expect([...groups.values()].flat()).toHaveLength(60);
    for (const [partition, group] of groups) {
      expect(partition).toBeGreaterThanOrEqual(0);
      expect(partition).toBeLessThan(3);
      const indexes = group.map((message) => Number(message.id.slice("event-".length)));
      expect(indexes).toEqual([...indexes].sort((a, b) => a - b));
    }
    const groupsOfKey = (key: string) => [...groups.values()].filter((group) => group.some((message) => message.key === key)).length;
    for (let account = 0; account < 7; account += 1) expect(groupsOfKey(`acct_${account}`)).toBe(1);
    // Leaders do not matter: a keyed message's partition is its key's hash modulo the partition count.
    const again = groupByPartition("orvado.billing.v1", messages, partitions(3).map((partition) => ({ ...partition, leader: -1 })));
    expect([...again.keys()].sort()).toEqual([...groups.keys()].sort());
  });
});
