import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import kafkajs from "kafkajs";
import { create, toBinary } from "@bufbuild/protobuf";
import { BillingEventSchema } from "@orvado/proto";
import { createLogger } from "@orvado/core";
import { BILLING_TOPIC, kafkaSettings, type EventStream } from "@orvado/events";
import { openKafkaStream } from "@orvado/events/kafka";
import { freeClusterBasePort, publishRetrying, startLocalCluster, stopLocalCluster, type LocalCluster } from "@orvado/kafka-local";

// Issue P §4: the analysts' example consumer, as its own process, keeps reading through
// a broker's kill -9 on a three-node cluster of the test's own (real JVMs on loopback,
// not the run's shared broker). Orvado's own producer (libs/events, acks=all, idempotent)
// publishes billing events before and after the kill.

const PREFIX = "failover.";
const dataDir = mkdtempSync(join(tmpdir(), "orvado-consumer-failover-"));
let cluster: LocalCluster;
let stream: EventStream;
let consumer: ChildProcess | undefined;

beforeAll(async () => {
  cluster = await startLocalCluster({ dataDir, nodes: 3, basePort: await freeClusterBasePort(3), heapMb: 256 });
  stream = await openKafkaStream({ settings: kafkaSettings(cluster.addresses, { topicPrefix: PREFIX }), clientId: "failover-test", logger: createLogger("failover-test", "silent") });
}, 180_000);

afterAll(async () => {
  if (consumer && consumer.exitCode === null) {
    consumer.kill("SIGTERM");
    await once(consumer, "exit");
  }
  await stream?.close();
  await stopLocalCluster(dataDir);
  rmSync(dataDir, { recursive: true, force: true });
});

/** completed events of requests `from` to `to` - 1, spread over ten accounts (every partition). */
function completedEvents(from: number, to: number) {
  return Array.from({ length: to - from }, (_, index) => {
    const requestId = `req_${from + index}`;
    const event = create(BillingEventSchema, {
      eventId: `${requestId}:completed`,
      requestId,
      accountId: `acct_${(from + index) % 10}`,
      keyId: "key_failover",
      kind: { case: "completed", value: { imagesDelivered: 1 } },
    });
    return { id: event.eventId, key: event.accountId, value: toBinary(BillingEventSchema, event) };
  });
}

/** Starts the example; the event ids it prints, as they come. */
function startConsumer(): Set<string> {
  const script = fileURLToPath(new URL("./consumer.ts", import.meta.url));
  consumer = spawn(process.execPath, ["--import", "tsx", script, "--from-beginning"], {
    env: { ...process.env, KAFKA_BROKERS: cluster.addresses.join(","), KAFKA_TOPIC_PREFIX: PREFIX, GROUP_ID: "analyst-failover" },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const seen = new Set<string>();
  let buffer = "";
  consumer.stdout!.setEncoding("utf8").on("data", (chunk: string) => {
    buffer += chunk;
    for (let end = buffer.indexOf("\n"); end >= 0; end = buffer.indexOf("\n")) {
      const line = JSON.parse(buffer.slice(0, end));
      buffer = buffer.slice(end + 1);
      if (line.event) seen.add(line.event.eventId);
    }
  });
  return seen;
}

async function until(seen: Set<string>, ids: string[], timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!ids.every((id) => seen.has(id))) {
    if (consumer?.exitCode !== null) throw new Error(`the consumer exited with ${consumer?.exitCode}`);
    if (Date.now() > deadline) throw new Error(`the consumer printed ${ids.filter((id) => seen.has(id)).length} of ${ids.length} events in ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** The node id leading partition 0 of the billing topic, asked again while a broker has not caught up with the metadata. */
async function leaderOfPartitionZero(): Promise<number> {
  const admin = new kafkajs.Kafka({ brokers: cluster.addresses, logLevel: kafkajs.logLevel.NOTHING }).admin();
  await admin.connect();
  try {
    for (let attempt = 1; ; attempt += 1) {
      try {
        const metadata = await admin.fetchTopicMetadata({ topics: [`${PREFIX}${BILLING_TOPIC}`] });
        return metadata.topics[0]!.partitions.find((partition) => partition.partitionId === 0)!.leader;
      } catch (error) {
        if (attempt === 10) throw error;
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    }
  } finally {
    await admin.disconnect();
  }
}

describe("examples/kafka-billing-consumer through a broker's kill -9 (three real brokers)", () => {
  it("goes on reading, and prints the events published after the kill", async () => {
    const before = completedEvents(0, 30);
    await stream.publish(BILLING_TOPIC, before);
    const seen = startConsumer();
    await until(seen, before.map((event) => event.id), 90_000);

    // The leader of partition 0 dies; its partitions move to the two others.
    const leader = await leaderOfPartitionZero();
    const victim = cluster.started.find((node) => node.address === cluster.addresses[leader - 1])!;
    await victim.kill();

    const after = completedEvents(30, 60);
    await publishRetrying(() => stream.publish(BILLING_TOPIC, after));
    await until(seen, after.map((event) => event.id), 90_000);
    expect(seen.size).toBe(60);
  }, 240_000);
});
