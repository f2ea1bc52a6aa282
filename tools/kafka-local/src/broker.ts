// Runs one Apache Kafka broker (KRaft, broker and controller in one JVM) from the
// jars Maven resolves for deploy/kafka/pom.xml: `npm run kafka:up`, CI, the tests
// that kill and restart a broker of their own, and each node of a local cluster
// (cluster.ts).
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, openSync, closeSync, readFileSync, writeFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { kafkaBrokerAnswers } from "@orvado/events";
import { log4jProperties, serverProperties, type BrokerPorts, type QuorumNode } from "./broker-config.ts";
import { ensureBrokerClasspath, javaCommand } from "./classpath.ts";
import { newClusterId } from "./cluster-id.ts";
import { BrokerError } from "./errors.ts";
import { canListen } from "@orvado/core";
import { processAlive, readLogTail } from "./os.ts";

export const DEFAULT_KAFKA_PORT = 9092;
/** The smallest JVM heap kafka:up accepts (KAFKA_HEAP_MB); broker-config.ts keeps the log cleaner's buffer within it. */
export const SMALLEST_HEAP_MB = 128;
export const DEFAULT_START_TIMEOUT_MS = 90_000;

export { BrokerError };

export interface LocalBrokerOptions extends Partial<BrokerPorts> {
  /** Holds the store (store/), server.properties, broker.log and broker.pid. */
  dataDir: string;
  /** How long the broker may take to answer metadata requests. */
  startTimeoutMs?: number;
  /** JVM heap, in MiB. */
  heapMb?: number;
  /** Keep running after this Node process exits (kafka:up); tests leave it false. */
  detached?: boolean;
  /** A node of a local cluster (cluster.ts), formatted with the cluster's id; alone when absent. */
  quorum?: QuorumNode & { clusterId: string };
}

export interface LocalBroker {
  /** host:port, for KAFKA_BROKERS. */
  readonly address: string;
  readonly pid: number;
  readonly dataDir: string;
  /** kill -9: no flush, no controlled shutdown; the store stays for a restart. */
  kill(): Promise<void>;
  /** A controlled shutdown (SIGTERM), SIGKILL after a bound. */
  stop(): Promise<void>;
}

interface BrokerFiles {
  store: string;
  properties: string;
  log4j: string;
  log: string;
  pid: string;
}

export function brokerFiles(dataDir: string): BrokerFiles {
  return {
    store: join(dataDir, "store"),
    properties: join(dataDir, "server.properties"),
    log4j: join(dataDir, "log4j2.properties"),
    log: join(dataDir, "broker.log"),
    pid: join(dataDir, "broker.pid"),
  };
}

/** The pid of a broker started on dataDir that is still alive, if any. */
export function runningBrokerPid(dataDir: string): number | undefined {
  const file = brokerFiles(dataDir).pid;
  if (!existsSync(file)) return undefined;
  const pid = Number(readFileSync(file, "utf8").trim());
  return Number.isSafeInteger(pid) && pid > 0 && processAlive(pid) ? pid : undefined;
}

/**
 * Formats the store on first use (a new cluster id), starts the broker and
 * resolves once it answers a metadata request. The same dataDir restarts the
 * same store, with its topics, offsets and groups.
 */
export async function startLocalBroker(options: LocalBrokerOptions): Promise<LocalBroker> {
  const launched = await launchBroker(options);
  const [broker] = await awaitBrokers([launched], 1, options.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS);
  return broker!;
}

/** A broker process started but not yet known to answer. */
export interface LaunchedBroker {
  address: string;
  pid: number;
  dataDir: string;
  files: BrokerFiles;
  exited: Promise<number | null>;
  kill(signal: NodeJS.Signals): void;
}

/** Checks its ports, writes its configuration, formats its store once and starts the JVM. */
export async function launchBroker(options: LocalBrokerOptions): Promise<LaunchedBroker> {
  const ports: BrokerPorts = {
    port: options.port ?? DEFAULT_KAFKA_PORT,
    controllerPort: options.controllerPort ?? (options.port ?? DEFAULT_KAFKA_PORT) + 1,
  };
  const files = brokerFiles(options.dataDir);
  for (const port of [ports.port, ports.controllerPort]) {
    if (!(await canListen(port))) {
      throw new BrokerError(`port ${port} on 127.0.0.1 is in use by another process; choose another with KAFKA_PORT (the controller takes KAFKA_CONTROLLER_PORT, by default KAFKA_PORT+1)`);
    }
  }
  const java = javaCommand();
  const classpath = await ensureBrokerClasspath();
  mkdirSync(files.store, { recursive: true });
  writeFileSync(files.properties, serverProperties(ports, files.store, options.quorum));
  writeFileSync(files.log4j, log4jProperties());
  const jvm = [`-Xms128m`, `-Xmx${options.heapMb ?? 1024}m`, "-XX:+UseG1GC", `-Dlog4j2.configurationFile=${files.log4j}`, "-cp", classpath];
  formatStoreOnce(java, jvm, files, options.quorum?.clusterId ?? newClusterId());

  const logFd = openSync(files.log, "a");
  const child = spawn(java, [...jvm, "kafka.Kafka", files.properties], {
    detached: options.detached ?? false,
    stdio: ["ignore", logFd, logFd],
  });
  closeSync(logFd);
  const pid = child.pid;
  if (pid === undefined) throw new BrokerError(`${java} could not be started`);
  writeFileSync(files.pid, `${pid}\n`);
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  if (options.detached) child.unref();
  else process.once("exit", () => child.kill("SIGKILL"));
  return { address: `127.0.0.1:${ports.port}`, pid, dataDir: options.dataDir, files, exited, kill: (signal) => child.kill(signal) };
}

/**
 * Resolves once a metadata request to the launched brokers sees `count` brokers (a
 * cluster's nodes can answer only once a majority of them runs, so they are launched
 * first and awaited together). A broker that exits or a timeout kills them all and
 * throws with the end of each one's log.
 */
export async function awaitBrokers(
  launched: LaunchedBroker[],
  count: number,
  timeoutMs: number,
  addresses = launched.map((broker) => broker.address),
): Promise<LocalBroker[]> {
  const outcome = await Promise.race([
    kafkaBrokerAnswers(addresses, timeoutMs, count).then((answered) => (answered ? "up" : "timeout")),
    ...launched.map((broker) => broker.exited.then((code) => `exited with code ${code} (${broker.address})`)),
  ]);
  if (outcome !== "up") {
    for (const broker of launched) broker.kill("SIGKILL");
    await Promise.all(launched.map((broker) => broker.exited));
    for (const broker of launched) rmSync(broker.files.pid, { force: true });
    const why = outcome === "timeout" ? `did not answer a metadata request within ${timeoutMs} ms` : outcome;
    const logs = launched.map((broker) => `The end of ${broker.files.log}:\n${readLogTail(broker.files.log)}`).join("\n");
    throw new BrokerError(`the Kafka broker ${why}. ${logs}`);
  }
  return launched.map((broker) => ({
    address: broker.address,
    pid: broker.pid,
    dataDir: broker.dataDir,
    async kill() {
      broker.kill("SIGKILL");
      await broker.exited;
    },
    async stop() {
      await stopPid(broker.pid, broker.exited);
      rmSync(broker.files.pid, { force: true });
    },
  }));
}

/** Stops the broker started on dataDir (by its pid file). False when none was running. */
export async function stopLocalBroker(dataDir: string): Promise<boolean> {
  const pid = runningBrokerPid(dataDir);
  rmSync(brokerFiles(dataDir).pid, { force: true });
  if (pid === undefined) return false;
  await stopPid(pid, waitForExit(pid));
  return true;
}

const STOP_TIMEOUT_MS = 30_000;

async function stopPid(pid: number, exited: Promise<unknown>): Promise<void> {
  try {
    process.kill(pid, "SIGTERM");
  } catch {
    return;
  }
  const timer = setTimeout(() => processAlive(pid) && process.kill(pid, "SIGKILL"), STOP_TIMEOUT_MS);
  await exited;
  clearTimeout(timer);
}

async function waitForExit(pid: number): Promise<void> {
  while (processAlive(pid)) await new Promise((resolve) => setTimeout(resolve, 100));
}

/** KRaft needs a formatted store (meta.properties with a cluster id) before the first start. */
function formatStoreOnce(java: string, jvm: string[], files: BrokerFiles, clusterId: string): void {
  if (existsSync(join(files.store, "meta.properties"))) return;
  const result = spawnSync(java, [...jvm, "kafka.tools.StorageTool", "format", "-t", clusterId, "-c", files.properties], {
    encoding: "utf8",
  });
  if (result.status !== 0) {
    throw new BrokerError(`formatting the Kafka store in ${files.store} failed:\n${(result.stdout + result.stderr).slice(-4000)}`);
  }
}
