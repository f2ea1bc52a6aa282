import { describe, expect, it } from "vitest";
import { SINGLE_NODE_SETTINGS, serverProperties } from "@orvado/kafka-local/broker-config";
import { kafkaContainerEnvironment } from "./test-containers.ts";

// The broker container's settings (no transport: the containers themselves
// need a Docker engine, which the project's machines do not have).

/** How Confluent's image reads KAFKA_* variables back into properties (its env_to_props). */
function propertiesFromEnvironment(environment: Record<string, string>): Record<string, string> {
  const properties: Record<string, string> = {};
  for (const [key, value] of Object.entries(environment)) {
    const name = key.slice("KAFKA_".length).toLowerCase().split("_").join(".").split("...").join("-").split("..").join("_");
    properties[name] = value;
  }
  return properties;
}

describe("kafkaContainerEnvironment", () => {
  it("spells each property the way Confluent's image reads it back", () => {
    const environment = kafkaContainerEnvironment([
      ["offsets.topic.replication.factor", 1],
      ["auto.create.topics.enable", "false"],
      ["some_property.with-dash", "x"],
    ]);
    expect(environment).toEqual({
      KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR: "1",
      KAFKA_AUTO_CREATE_TOPICS_ENABLE: "false",
      KAFKA_SOME__PROPERTY_WITH___DASH: "x",
    });
    expect(propertiesFromEnvironment(environment)).toEqual({
      "offsets.topic.replication.factor": "1",
      "auto.create.topics.enable": "false",
      "some_property.with-dash": "x",
    });
  });

  it("gives the container every single-node setting the local broker (CI's) is started with", () => {
    const fromContainer = propertiesFromEnvironment(kafkaContainerEnvironment(SINGLE_NODE_SETTINGS));
    const localBroker = Object.fromEntries(
      serverProperties({ port: 9092, controllerPort: 9093 }, "/store")
        .trim()
        .split("\n")
        .map((line) => line.split("=", 2) as [string, string]),
    );
    for (const [name, value] of Object.entries(fromContainer)) expect(localBroker[name], name).toBe(value);
    expect(fromContainer["num.partitions"]).toBe("3");
    expect(fromContainer["auto.create.topics.enable"]).toBe("false");
  });
});
