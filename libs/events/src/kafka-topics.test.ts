import { describe, expect, it } from "vitest";
import { CLUSTER_SIZED_REPLICATION, kafkaSettings } from "./kafka-settings.ts";
import { topicReplication } from "./kafka-topics.ts";

// The replication Orvado creates its topics with (no broker: the rule alone;
// tools/kafka-local/src/cluster.kafka.test.ts checks it on a real three-node cluster).

describe("topicReplication", () => {
  it("by default gives min(3, brokers) replicas, and min.insync.replicas 2 from three", () => {
    expect(kafkaSettings(["b:9092"]).replicationFactor).toBe(CLUSTER_SIZED_REPLICATION);
    expect(topicReplication(CLUSTER_SIZED_REPLICATION, 1)).toEqual({ replicationFactor: 1, configEntries: [] });
    expect(topicReplication(CLUSTER_SIZED_REPLICATION, 2)).toEqual({ replicationFactor: 2, configEntries: [] });
    const three = { replicationFactor: 3, configEntries: [{ name: "min.insync.replicas", value: "2" }] };
    expect(topicReplication(CLUSTER_SIZED_REPLICATION, 3)).toEqual(three);
    expect(topicReplication(CLUSTER_SIZED_REPLICATION, 7)).toEqual(three);
  });

  it("takes an operator's replication as given, and leaves -1 to the broker's defaults", () => {
    expect(topicReplication(5, 7)).toEqual({ replicationFactor: 5, configEntries: [{ name: "min.insync.replicas", value: "2" }] });
    expect(topicReplication(1, 3)).toEqual({ replicationFactor: 1, configEntries: [] });
    expect(topicReplication(-1, 3)).toEqual({ replicationFactor: -1, configEntries: [] });
  });
});
