// npm run kafka:up / kafka:down: one local broker for development and CI, or a
// local cluster of KAFKA_NODES nodes (cluster.ts).
import { resolve } from "node:path";
import { z } from "zod";
import { BrokerError, DEFAULT_KAFKA_PORT, DEFAULT_START_TIMEOUT_MS, SMALLEST_HEAP_MB, runningBrokerPid, startLocalBroker, stopLocalBroker } from "./broker.ts";
import { startLocalCluster, stopLocalCluster } from "./cluster.ts";

/** A cluster node's default heap: three JVMs share a development machine. */
const CLUSTER_NODE_HEAP_MB = 256;

const Env = z.object({
  KAFKA_PORT: z.coerce.number().int().min(1).max(65_534).default(DEFAULT_KAFKA_PORT),
  /** The KRaft controller's port; KAFKA_PORT+1 when not given. */
  KAFKA_CONTROLLER_PORT: z.coerce.number().int().min(1).max(65_535).optional(),
  KAFKA_DATA_DIR: z.string().min(1).optional(),
  ORVADO_DATA_DIR: z.string().min(1).default("./data"),
  KAFKA_START_TIMEOUT_MS: z.coerce.number().int().min(1_000).default(DEFAULT_START_TIMEOUT_MS),
  /** JVM heap per node; 1024 for a single broker, 256 for each node of a cluster when not given. */
  KAFKA_HEAP_MB: z.coerce.number().int().min(SMALLEST_HEAP_MB).optional(),
  /** 1: a single broker. More: a local cluster, node n on KAFKA_PORT+2(n-1) and the port after it. */
  KAFKA_NODES: z.coerce.number().int().min(1).max(5).default(1),
}).refine((env) => env.KAFKA_PORT + 2 * env.KAFKA_NODES - 1 <= 65_535, { message: "the nodes' ports (two per node from KAFKA_PORT) must end by 65535", path: ["KAFKA_PORT"] });

type Env = z.output<typeof Env>;

async function main(command: string | undefined): Promise<number> {
  const parsed = Env.safeParse(process.env);
  if (!parsed.success) {
    process.stderr.write(`kafka: ${parsed.error.issues.map((issue) => `${issue.path.join(".")}: ${issue.message}`).join("; ")}\n`);
    return 2;
  }
  const env = parsed.data;
  const dataDir = resolve(env.KAFKA_DATA_DIR ?? `${env.ORVADO_DATA_DIR}/kafka`);
  if (command === "up" && env.KAFKA_NODES > 1) {
    if (env.KAFKA_CONTROLLER_PORT !== undefined) {
      process.stderr.write("kafka: KAFKA_CONTROLLER_PORT applies to a single broker; with KAFKA_NODES each node's controller takes the port after its own\n");
      return 2;
    }
    return upCluster(env, dataDir);
  }
  if (command === "up") {
    if (runningBrokerPid(dataDir) !== undefined) {
      process.stderr.write(`kafka: a broker is already running on ${dataDir} (pid ${runningBrokerPid(dataDir)})\n`);
    } else {
      const broker = await startLocalBroker({
        dataDir,
        port: env.KAFKA_PORT,
        controllerPort: env.KAFKA_CONTROLLER_PORT,
        startTimeoutMs: env.KAFKA_START_TIMEOUT_MS,
        heapMb: env.KAFKA_HEAP_MB ?? 1024,
        detached: true,
      });
      process.stderr.write(`kafka: broker up (pid ${broker.pid}), store and log in ${dataDir}; stop it with npm run kafka:down\n`);
    }
    process.stdout.write(`KAFKA_BROKERS=127.0.0.1:${env.KAFKA_PORT}\n`);
    return 0;
  }
  if (command === "down") {
    // A single broker and a cluster's nodes alike, whatever KAFKA_NODES says now.
    const [single, nodes] = await Promise.all([stopLocalBroker(dataDir), stopLocalCluster(dataDir)]);
    const stopped = Number(single) + nodes;
    process.stderr.write(stopped > 0 ? `kafka: ${stopped === 1 ? "broker" : `${stopped} brokers`} on ${dataDir} stopped\n` : `kafka: no broker was running on ${dataDir}\n`);
    return 0;
  }
  process.stderr.write("usage: kafka up | kafka down   (npm run kafka:up, npm run kafka:down)\n");
  return 2;
}

/** Starts the cluster's nodes that are not running and prints the brokers once metadata lists them all. */
async function upCluster(env: Env, dataDir: string): Promise<number> {
  const cluster = await startLocalCluster({
    dataDir,
    nodes: env.KAFKA_NODES,
    basePort: env.KAFKA_PORT,
    startTimeoutMs: env.KAFKA_START_TIMEOUT_MS,
    heapMb: env.KAFKA_HEAP_MB ?? CLUSTER_NODE_HEAP_MB,
    detached: true,
  });
  const started = cluster.started.map((node) => node.pid);
  process.stderr.write(
    started.length === 0
      ? `kafka: a cluster of ${env.KAFKA_NODES} nodes is already running on ${dataDir}\n`
      : `kafka: ${env.KAFKA_NODES} brokers up (started pids ${started.join(", ")}), one directory per node in ${dataDir}; stop them with npm run kafka:down\n`,
  );
  process.stdout.write(`KAFKA_BROKERS=${cluster.addresses.join(",")}\n`);
  return 0;
}

main(process.argv[2]).then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`kafka: ${error instanceof BrokerError ? error.message : String((error as Error)?.stack ?? error)}\n`);
    process.exit(1);
  },
);
