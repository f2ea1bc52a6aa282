import { spawnSync } from "node:child_process";
import { once } from "node:events";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import kafkajs from "kafkajs";
import { kafkaBrokerAnswers } from "@orvado/events";
import { BrokerError, SMALLEST_HEAP_MB, startLocalBroker, type LocalBroker } from "./broker.ts";
import { processAlive } from "./os.ts";

// npm run kafka:up / kafka:down and the broker module behind them, with real
// JVM brokers on free loopback ports (not the run's shared broker).

const CLI = fileURLToPath(new URL("./cli.ts", import.meta.url));
const dirs: string[] = [];
const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), "orvado-kafka-local-"));
  dirs.push(dir);
  return dir;
};
afterAll(() => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

/** Two ports free on 127.0.0.1 when asked (a broker and its controller). */
async function freePorts(): Promise<[number, number]> {
  const ports: number[] = [];
  for (let i = 0; i < 2; i += 1) {
    const server = createServer().listen(0, "127.0.0.1");
    await once(server, "listening");
    ports.push((server.address() as { port: number }).port);
    server.close();
  }
  return [ports[0]!, ports[1]!];
}

function cli(command: string, env: NodeJS.ProcessEnv) {
  const result = spawnSync(process.execPath, ["--import", "tsx", CLI, command], { env: { ...process.env, ...env }, encoding: "utf8", timeout: 120_000 });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe("the local broker (real JVM)", () => {
  it("starts, keeps its store across kill -9, refuses a port in use, and stops", async () => {
    const dataDir = tempDir();
    const [port, controllerPort] = await freePorts();
    let broker: LocalBroker = await startLocalBroker({ dataDir, port, controllerPort, heapMb: 256 });
    expect(broker.address).toBe(`127.0.0.1:${port}`);
    const admin = new kafkajs.Kafka({ brokers: [broker.address], logLevel: kafkajs.logLevel.NOTHING }).admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic: "kept", numPartitions: 2 }], waitForLeaders: true });
    await admin.disconnect();

    await expect(startLocalBroker({ dataDir: tempDir(), port, controllerPort })).rejects.toThrow(/port \d+ on 127\.0\.0\.1 is in use/);

    await broker.kill();
    expect(processAlive(broker.pid)).toBe(false);
    broker = await startLocalBroker({ dataDir, port, controllerPort, heapMb: 256 });
    const again = new kafkajs.Kafka({ brokers: [broker.address], logLevel: kafkajs.logLevel.NOTHING }).admin();
    await again.connect();
    const metadata = await again.fetchTopicMetadata({ topics: ["kept"] });
    expect(metadata.topics[0]!.partitions).toHaveLength(2);
    await again.disconnect();

    await broker.stop();
    expect(processAlive(broker.pid)).toBe(false);
    expect(await kafkaBrokerAnswers([broker.address], 500)).toBe(false);
  });

  it("starts with the smallest heap kafka:up allows (SMALLEST_HEAP_MB)", async () => {
    // Kafka's own log-cleaner buffer (128 MiB) made such a broker exit with OutOfMemoryError (broker-config.ts).
    const [port, controllerPort] = await freePorts();
    const broker = await startLocalBroker({ dataDir: tempDir(), port, controllerPort, heapMb: SMALLEST_HEAP_MB });
    expect(await kafkaBrokerAnswers([broker.address], 5_000)).toBe(true);
    await broker.stop();
    expect(processAlive(broker.pid)).toBe(false);
  });

  it("fails with the broker's log when it does not answer in time", async () => {
    const [port, controllerPort] = await freePorts();
    const failing = startLocalBroker({ dataDir: tempDir(), port, controllerPort, startTimeoutMs: 300, heapMb: 256 });
    await expect(failing).rejects.toBeInstanceOf(BrokerError);
    await expect(failing).rejects.toThrow(/did not answer a metadata request within 300 ms\. The end of .*broker\.log/);
  });
});

describe("npm run kafka:up / kafka:down (the CLI, real JVM)", () => {
  it("prints KAFKA_BROKERS on a line of its own, is idempotent, and stops the broker", async () => {
    const [port, controllerPort] = await freePorts();
    const env = { KAFKA_DATA_DIR: tempDir(), KAFKA_PORT: String(port), KAFKA_CONTROLLER_PORT: String(controllerPort), KAFKA_HEAP_MB: "256" };
    const up = cli("up", env);
    expect(up.code, up.stderr).toBe(0);
    expect(up.stdout).toBe(`KAFKA_BROKERS=127.0.0.1:${port}\n`);
    expect(await kafkaBrokerAnswers([`127.0.0.1:${port}`], 5_000)).toBe(true);

    const twice = cli("up", env);
    expect(twice.code).toBe(0);
    expect(twice.stdout).toBe(`KAFKA_BROKERS=127.0.0.1:${port}\n`);
    expect(twice.stderr).toMatch(/already running/);

    const down = cli("down", env);
    expect(down.code).toBe(0);
    expect(down.stderr).toMatch(/stopped/);
    expect(existsSync(join(env.KAFKA_DATA_DIR, "broker.pid"))).toBe(false);
    expect(await kafkaBrokerAnswers([`127.0.0.1:${port}`], 500)).toBe(false);
    expect(cli("down", env).stderr).toMatch(/no broker was running/);
  });

  it("exits 1 with a clear message when the port is taken or Java is missing, and 2 on a bad setting", async () => {
    const squatter = createServer().listen(0, "127.0.0.1");
    await once(squatter, "listening");
    const taken = (squatter.address() as { port: number }).port;
    const busy = cli("up", { KAFKA_DATA_DIR: tempDir(), KAFKA_PORT: String(taken) });
    squatter.close();
    expect(busy.code).toBe(1);
    expect(busy.stderr).toMatch(new RegExp(`port ${taken} on 127\\.0\\.0\\.1 is in use by another process; choose another with KAFKA_PORT`));
    expect(busy.stdout).toBe("");

    const [port, controllerPort] = await freePorts();
    const noJava = cli("up", { KAFKA_DATA_DIR: tempDir(), KAFKA_PORT: String(port), KAFKA_CONTROLLER_PORT: String(controllerPort), JAVA_HOME: "/nonexistent-jdk" });
    expect(noJava.code).toBe(1);
    expect(noJava.stderr).toMatch(/Java was not found \(\/nonexistent-jdk\/bin\/java\)/);

    expect(cli("up", { KAFKA_PORT: "ninety" }).code).toBe(2);
    expect(cli("up", { KAFKA_CONTROLLER_PORT: "0" }).code).toBe(2);
    expect(cli("sideways", {}).code).toBe(2);
  });
});
