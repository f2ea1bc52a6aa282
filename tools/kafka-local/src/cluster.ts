// A local KRaft cluster of several nodes on one machine (KAFKA_NODES=3 npm run kafka:up,
// the three-broker fault test): each node a broker and a controller in its own JVM, with
// its own ports and its own directory under the cluster's.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { canListen } from "@orvado/core";
import { join } from "node:path";
import { awaitBrokers, brokerFiles, DEFAULT_START_TIMEOUT_MS, launchBroker, runningBrokerPid, stopLocalBroker, type LaunchedBroker, type LocalBroker } from "./broker.ts";
import { newClusterId } from "./cluster-id.ts";

export interface LocalClusterOptions {
  /** Holds node-1/, node-2/, … (each a broker's data directory). */
  dataDir: string;
  nodes: number;
  /** Node n (from 1) listens on basePort + 2(n-1) for clients and the port after it as a controller. */
  basePort: number;
  startTimeoutMs?: number;
  /** Each node's JVM heap, in MiB. */
  heapMb?: number;
  detached?: boolean;
}

export interface LocalCluster {
  /** host:port of every node, node 1 first: KAFKA_BROKERS. */
  readonly addresses: string[];
  /** The nodes started by this call (a node already running is not among them). */
  readonly started: LocalBroker[];
}

/** A node's directory, and its client and controller ports. */
export function clusterNode(options: Pick<LocalClusterOptions, "dataDir" | "basePort">, nodeId: number) {
  const port = options.basePort + 2 * (nodeId - 1);
  return { nodeId, dataDir: join(options.dataDir, `node-${nodeId}`), port, controllerPort: port + 1, address: `127.0.0.1:${port}` };
}

/**
 * Starts every node that is not running (all of them at first; after a kill -9, the
 * ones killed) and resolves once a metadata request sees all the nodes as brokers.
 * The nodes are launched before any is awaited: a controller quorum answers only
 * once a majority of its voters runs.
 */
export async function startLocalCluster(options: LocalClusterOptions): Promise<LocalCluster> {
  const nodes = Array.from({ length: options.nodes }, (_, index) => clusterNode(options, index + 1));
  const controllerPorts = nodes.map((node) => node.controllerPort);
  const clusterId = existingClusterId(nodes.map((node) => node.dataDir)) ?? newClusterId();
  const launched: LaunchedBroker[] = [];
  try {
    for (const node of nodes) {
      if (runningBrokerPid(node.dataDir) !== undefined) continue;
      launched.push(
        await launchBroker({
          dataDir: node.dataDir,
          port: node.port,
          controllerPort: node.controllerPort,
          heapMb: options.heapMb,
          detached: options.detached,
          quorum: { nodeId: node.nodeId, controllerPorts, clusterId },
        }),
      );
    }
  } catch (error) {
    for (const broker of launched) broker.kill("SIGKILL");
    throw error;
  }
  const started = await awaitBrokers(launched, options.nodes, options.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS, nodes.map((node) => node.address));
  return { addresses: nodes.map((node) => node.address), started };
}

/** The data directories of the cluster's nodes under dataDir that exist (node-1, node-2, …). */
export function clusterNodeDirs(dataDir: string): string[] {
  if (!existsSync(dataDir)) return [];
  return readdirSync(dataDir)
    .filter((name) => /^node-\d+$/.test(name))
    .map((name) => join(dataDir, name));
}

/** Stops every node of a cluster under dataDir; how many were running. */
export async function stopLocalCluster(dataDir: string): Promise<number> {
  const stopped = await Promise.all(clusterNodeDirs(dataDir).map((dir) => stopLocalBroker(dir)));
  return stopped.filter(Boolean).length;
}

/** Every node of one cluster must be formatted with the same cluster id: reuse the one a node already has. */
function existingClusterId(dataDirs: string[]): string | undefined {
  for (const dir of dataDirs) {
    const meta = join(brokerFiles(dir).store, "meta.properties");
    if (!existsSync(meta)) continue;
    const id = /^cluster\.id=(.+)$/m.exec(readFileSync(meta, "utf8"))?.[1]?.trim();
    if (id) return id;
  }
  return undefined;
}

/**
 * A base port for a cluster of `nodes` whose ports (two per node) are all free on 127.0.0.1,
 * below Linux's ephemeral range so that no outgoing connection takes one while a node is
 * down (tests that kill and restart nodes).
 */
export async function freeClusterBasePort(nodes: number): Promise<number> {
  for (;;) {
    const base = 20_000 + 2 * Math.floor(Math.random() * 5_000);
    const free = await Promise.all(Array.from({ length: 2 * nodes }, (_, offset) => canListen(base + offset)));
    if (free.every(Boolean)) return base;
  }
}
