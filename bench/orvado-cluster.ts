// The "Orvado cluster" leg's Orvado: `npm run start:cluster`'s topology, started
// through the same startCluster() (services/stack/src/cluster.ts): auth, billing,
// generation and edge as two processes each from their bundles, HAProxy in front
// of the edges, on a fresh PostgreSQL database and Kafka under the run's own topic
// prefix. The load goes to the balancer only. Its processes are children of the
// benchmark's process (as the soak's four-process Orvado, orvado-split.ts): they
// are separate processes already, and die with it.
import { randomBytes } from "node:crypto";
import { createWriteStream, rmSync } from "node:fs";
import type { KafkaSettings } from "@orvado/events";
import { findHaproxy, HAPROXY_INSTALL_HINT } from "../services/stack/src/balancer.ts";
import { startCluster, type RunningCluster as StartedCluster } from "../services/stack/src/cluster.ts";
import { freePort } from "../services/stack/src/process-stack.ts";
import { fundBenchAccounts } from "./bench-accounts.ts";
import { createBenchDatabase } from "./database.ts";
import { benchDataDir } from "./data-dir.ts";
import { kafkaEnv } from "./kafka.ts";
import { childrenNamed } from "./processes.ts";
import { BENCH_SERVICE_ENV, logFile, type OrvadoInfo } from "./servers.ts";

export interface RunningOrvado {
  info: OrvadoInfo;
  stop(): Promise<void>;
}

/** The cluster's own processes besides its info: the services' and the balancer's (bench:mix reads their CPU and RSS). */
export interface RunningCluster extends RunningOrvado {
  pids(): number[];
}

/** Why the cluster cannot run on this machine, or null: the balancer it needs. */
export function clusterMissing(): string | null {
  return findHaproxy() ? null : `haproxy is not installed (${HAPROXY_INSTALL_HINT})`;
}

export interface ClusterStart {
  modelsFile: string;
  accounts: number;
  kafka: KafkaSettings;
}

function clusterEnv(start: ClusterStart, databaseUrl: string, dataDir: string, port: number): NodeJS.ProcessEnv {
  return {
    ...process.env,
    ...BENCH_SERVICE_ENV,
    ...kafkaEnv(start.kafka),
    ORVADO_MODELS_FILE: start.modelsFile,
    ORVADO_PRICES_FILE: new URL("../config/prices.json", import.meta.url).pathname,
    DATABASE_URL: databaseUrl,
    ORVADO_DATA_DIR: dataDir,
    PORT: String(port),
    // Given here, so the benchmark can fund accounts over the services' internal RPC.
    ORVADO_INTERNAL_SECRET: randomBytes(24).toString("base64url"),
    ORVADO_ADMIN_EMAIL: "admin@example.test",
    ORVADO_ADMIN_PASSWORD: "admin-password-1",
  };
}

export async function startOrvadoCluster(start: ClusterStart): Promise<RunningCluster> {
  const database = await createBenchDatabase();
  const dataDir = benchDataDir("orvado-cluster-bench-");
  const log = createWriteStream(logFile("orvado-cluster"), { flags: "a" });
  let cluster: StartedCluster | undefined;
  const stop = async () => {
    await cluster?.stop();
    await database.drop();
    rmSync(dataDir, { recursive: true, force: true });
    log.end();
  };
  try {
    const env = clusterEnv(start, database.url, dataDir, await freePort());
    cluster = await startCluster({ env, onLog: (source, line) => log.write(`[${source}] ${line}\n`) });
    const services = { authUrls: cluster.urls.auth, billingUrls: cluster.urls.billing, internalSecret: env.ORVADO_INTERNAL_SECRET! };
    const accounts = await fundBenchAccounts(services, start.accounts, "bench");
    const info: OrvadoInfo = {
      edgeUrl: cluster.url,
      key: accounts[0]!.key,
      accountId: accounts[0]!.accountId,
      accounts,
      databaseUrl: database.url,
      pid: cluster.processes.pids().edge!,
      stream: "kafka",
      kafka: start.kafka,
      cluster: true,
    };
    const started = cluster;
    // HAProxy runs as a child of this process (services/stack/src/balancer.ts).
    return { info, stop, pids: () => [...Object.values(started.processes.pids()), ...childrenNamed(process.pid, "haproxy")] };
  } catch (error) {
    await stop();
    throw error;
  }
}
