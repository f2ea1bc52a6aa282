// Orvado as four processes (auth, billing, generation, edge: each service's own
// main.ts, as docker-compose runs them) on a fresh PostgreSQL database, started by
// the same ProcessStack the fault-injection test uses. The soak needs this: one
// process holding 10,000 client sockets and 10,000 upstream sockets would need
// more open files than a container usually allows. For more held requests than
// one process has descriptors for, the edge and generation run as several
// processes each (options.replicas).
import { appendFileSync, rmSync } from "node:fs";
import { ProcessStack, type ProcessStackOptions } from "../services/stack/src/process-stack.ts";
import { createBenchDatabase } from "./database.ts";
import { benchDataDir } from "./data-dir.ts";
import { fundBenchAccounts } from "./bench-accounts.ts";
import { logFile, type OrvadoInfo } from "./servers.ts";

export interface SplitOrvado {
  info: OrvadoInfo;
  /** Every process in start order: auth, billing, generation (then generation#2, …), edge (then edge#2, …). */
  processes: { name: string; pid: number }[];
  /** The URL of each edge process, the first process's first: clients spread their requests over them. */
  edgeUrls: string[];
  stop(): Promise<void>;
}

export async function startSplitOrvado(options: {
  modelsFile: string;
  accounts: number;
  env?: NodeJS.ProcessEnv;
  /** Processes per service (default 1); every caller is given all of a service's, and the edge calls generation's round robin. */
  replicas?: ProcessStackOptions["replicas"];
}): Promise<SplitOrvado> {
  const database = await createBenchDatabase();
  const servicesLog = logFile("services");
  const dataDir = benchDataDir("orvado-soak-");
  let stack: ProcessStack | undefined;
  const stop = async () => {
    await stack?.stop();
    await database.drop();
    rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    stack = await ProcessStack.start({
      databaseUrl: database.url,
      dataDir,
      replicas: options.replicas,
      // Warnings and errors of every service (why a request failed), kept in bench/results/services.log.
      onLog: (service, line) => appendFileSync(servicesLog, `${service} ${line}\n`),
      env: {
        ORVADO_MODELS_FILE: options.modelsFile,
        GENERATION_ALLOW_PRIVATE_UPSTREAMS: "true",
        // One account carries all of a run's connections (10,000 held jobs in the soak): no per-account job limit.
        GENERATION_ACCOUNT_MAX_CONCURRENT_JOBS: "0",
        BENCH_UPSTREAM_KEY: "sk-bench-not-a-real-key",
        // Node flags for the service processes only (e.g. --heapsnapshot-signal=SIGUSR2 to look inside one).
        ...(process.env.BENCH_SERVICE_NODE_OPTIONS ? { NODE_OPTIONS: process.env.BENCH_SERVICE_NODE_OPTIONS } : {}),
        ...options.env,
        // Settings to compare, run by run (e.g. "GENERATION_MAX_UPSTREAM_BYTES=104857600").
        ...serviceSettings(process.env.SOAK_SERVICE_ENV),
      },
    });
    const accounts = await fundBenchAccounts({ authUrls: stack.url("auth"), billingUrls: stack.url("billing"), internalSecret: stack.secret }, options.accounts, "soak");
    // pids() lists the processes in the order they started.
    const processes = Object.entries(stack.pids()).map(([name, pid]) => ({ name, pid }));
    return {
      info: { edgeUrl: stack.url("edge"), key: accounts[0]!.key, accountId: accounts[0]!.accountId, accounts, databaseUrl: database.url, pid: processes[0]!.pid, stream: "postgres" },
      processes,
      edgeUrls: stack.replicaPorts.edge.map((port) => `http://127.0.0.1:${port}`),
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** SOAK_SERVICE_ENV: space-separated NAME=value pairs given to every service process. */
export function serviceSettings(text: string | undefined): Record<string, string> {
  const settings: Record<string, string> = {};
  for (const pair of (text ?? "").split(/\s+/).filter(Boolean)) {
    const match = /^([A-Z][A-Z0-9_]*)=(.*)$/.exec(pair);
    if (!match) throw new Error(`SOAK_SERVICE_ENV takes NAME=value pairs separated by spaces, not ${JSON.stringify(pair)}`);
    settings[match[1]!] = match[2]!;
  }
  return settings;
}
