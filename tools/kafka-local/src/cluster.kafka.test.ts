import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import kafkajs from "kafkajs";
import { createLogger } from "@orvado/core";
import { kafkaSettings } from "@orvado/events";
import { openKafkaStream } from "@orvado/events/kafka";
import { freeClusterBasePort } from "./cluster.ts";
import { publishRetrying } from "./publish-retrying.ts";
import { processAlive } from "./os.ts";

// KAFKA_NODES=3 npm run kafka:up / kafka:down (the CLI, three real JVMs on loopback
// ports of the test's own, not the run's shared broker): three brokers in metadata,
// Orvado's topic replicated three times with min.insync.replicas 2, writes going on
// with one node killed, and every node stopped.

const CLI = fileURLToPath(new URL("./cli.ts", import.meta.url));
const dataDir = mkdtempSync(join(tmpdir(), "orvado-kafka-cluster-"));
let env: NodeJS.ProcessEnv = {};

afterAll(() => {
  cli("down", env);
  rmSync(dataDir, { recursive: true, force: true });
});

function cli(command: string, extra: NodeJS.ProcessEnv) {
  const result = spawnSync(process.execPath, ["--import", "tsx", CLI, command], { env: { ...process.env, ...extra }, encoding: "utf8", timeout: 180_000 });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

const nodePid = (node: number) => Number(readFileSync(join(dataDir, `node-${node}`, "broker.pid"), "utf8").trim());

describe("a local three-node cluster (KAFKA_NODES=3, real JVMs)", () => {
  it("starts three brokers, replicates Orvado's topic three times with min ISR 2, survives a kill -9 and stops", async () => {
    const base = await freeClusterBasePort(3);
    env = { KAFKA_DATA_DIR: dataDir, KAFKA_PORT: String(base), KAFKA_NODES: "3", KAFKA_HEAP_MB: "256" };
    const brokers = [base, base + 2, base + 4].map((port) => `127.0.0.1:${port}`);
    const up = cli("up", env);
    expect(up.code, up.stderr).toBe(0);
    expect(up.stdout).toBe(`KAFKA_BROKERS=${brokers.join(",")}\n`);

    const kafka = new kafkajs.Kafka({ brokers, logLevel: kafkajs.logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    const cluster = await admin.describeCluster();
    expect(cluster.brokers.map((broker) => `${broker.host}:${broker.port}`).sort()).toEqual([...brokers].sort());

    // Orvado creates its topic on first publish, replicated by the cluster's size.
    const settings = kafkaSettings(brokers, { topicPrefix: "cluster-test." });
    const stream = await openKafkaStream({ settings, clientId: "cluster-test", logger: createLogger("cluster-test", "silent") });
    const message = (id: string) => ({ id, key: "acct_cluster", value: new TextEncoder().encode(id) });
    // Retried as the outbox relay retries: a broker not yet told of the new topic can answer
    // kafkajs's wait for its leaders with UNKNOWN_TOPIC_OR_PARTITION, and the next publish creates nothing.
    await publishRetrying(() => stream.publish("orvado.billing.v1", [message("first")]));
    const topic = "cluster-test.orvado.billing.v1";
    const metadata = await admin.fetchTopicMetadata({ topics: [topic] });
    expect(metadata.topics[0]!.partitions).toHaveLength(3);
    for (const partition of metadata.topics[0]!.partitions) expect(partition.replicas).toHaveLength(3);
    const configs = await admin.describeConfigs({ resources: [{ type: kafkajs.ConfigResourceTypes.TOPIC, name: topic, configNames: ["min.insync.replicas"] }], includeSynonyms: false });
    expect(configs.resources[0]!.configEntries[0]).toMatchObject({ configName: "min.insync.replicas", configValue: "2" });

    // The leader of partition 0 killed: two replicas stay in sync, so writes with acks=all go
    // on once its partitions have new leaders, and a send to every partition loses none of
    // them (kafkajs alone would drop the messages of a partition whose new leader had already
    // answered for others: libs/events/src/kafka-partitions.ts).
    const leader = metadata.topics[0]!.partitions.find((partition) => partition.partitionId === 0)!.leader;
    const killed = nodePid(leader);
    process.kill(killed, "SIGKILL");
    while (processAlive(killed)) await new Promise((resolve) => setTimeout(resolve, 50));
    const accounts = Array.from({ length: 30 }, (_, index) => ({ ...message(`after-${index}`), key: `acct_${index}` }));
    await publishRetrying(() => stream.publish("orvado.billing.v1", accounts));
    await stream.close();
    await admin.disconnect();
    // A new client: kafkajs's admin keeps asking the dead leader for offsets it cached.
    const survivors = new kafkajs.Kafka({ brokers: brokers.filter((_, index) => index + 1 !== leader), logLevel: kafkajs.logLevel.NOTHING }).admin();
    await survivors.connect();
    const offsets = await survivors.fetchTopicOffsets(topic);
    expect(offsets.reduce((sum, partition) => sum + Number(partition.high), 0)).toBe(1 + accounts.length);
    await survivors.disconnect();

    // kafka:up again starts the node that died, and waits for it.
    const again = cli("up", env);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toBe(`KAFKA_BROKERS=${brokers.join(",")}\n`);
    expect(processAlive(nodePid(leader))).toBe(true);

    const pids = [1, 2, 3].map(nodePid);
    const down = cli("down", { KAFKA_DATA_DIR: dataDir });
    expect(down.code).toBe(0);
    expect(down.stderr).toMatch(/3 brokers on .* stopped/);
    expect(pids.filter(processAlive)).toEqual([]);
  }, 300_000);

  it("refuses KAFKA_CONTROLLER_PORT with several nodes, and ports past 65535", () => {
    expect(cli("up", { KAFKA_DATA_DIR: dataDir, KAFKA_NODES: "3", KAFKA_CONTROLLER_PORT: "30001" }).code).toBe(2);
    expect(cli("up", { KAFKA_DATA_DIR: dataDir, KAFKA_NODES: "3", KAFKA_PORT: "65532" }).code).toBe(2);
    expect(cli("up", { KAFKA_DATA_DIR: dataDir, KAFKA_NODES: "6" }).code).toBe(2);
  });
});
