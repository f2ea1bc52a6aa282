// `npm run start:cluster`: the production topology on one machine. Auth, billing
// and generation run as two processes each and the edge as two, from their
// bundles, on PostgreSQL and Kafka, behind HAProxy on one public port. Every
// caller is given all replicas of a service (comma-separated ORVADO_*_URL), and
// the two generation processes share one image directory. It owns no data and
// no rules: it starts processes and stops them in order.
import { mkdirSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { z } from "zod";
import { TIMING_DEFAULTS, checkSettingsAgree, parseEnv, portSchema, timingsFrom, writeAddressesFile } from "@orvado/core";
import type { Model } from "@orvado/proto";
import { servedModels } from "./banner-channels.ts";
import { loadStackConfig } from "./config.ts";
import { loadOrCreateSecrets } from "./secrets.ts";
import { ProcessStack, type ServiceName } from "./process-stack.ts";
import { HAPROXY_INSTALL_HINT, balancerUrl, findHaproxy, startBalancer, type RunningBalancer } from "./balancer.ts";

/** Processes per service. */
export const CLUSTER_REPLICAS: Record<ServiceName, number> = { auth: 2, billing: 2, generation: 2, edge: 2 };

/** The operator must fix the setup first; start-cluster.ts prints the message and exits 2. */
export class ClusterSetupError extends Error {}

const schema = z.object({
  PORT: portSchema.default(8080),
  EDGE_HOST: z.string().default("127.0.0.1"),
  GENERATION_JOB_TIMEOUT_MS: z.coerce.number().int().min(1000).max(600_000).default(TIMING_DEFAULTS.GENERATION_JOB_TIMEOUT_MS),
  GENERATION_IMAGE_DIR: z.string().optional(),
});

export interface RunningCluster {
  /** The balancer: the one public address. */
  url: string;
  urls: Record<ServiceName, string[]>;
  imageDir: string;
  /** Where the secrets and the addresses file (for the CLI) are. */
  dataDir: string;
  kafkaBrokers: string[];
  /** The catalog as the generation replicas serve it, for the banner. */
  models: Model[];
  processes: ProcessStack;
  /** The balancer stops taking requests and answers those in flight (their jobs finish), then the edges, generation, billing and auth stop. */
  stop(): Promise<void>;
  /** Ends every process at once (a second Ctrl-C). */
  kill(): void;
}

export interface ClusterOptions {
  env?: NodeJS.ProcessEnv;
  /** Each line a process prints on stderr, and its log lines at warn level or above. */
  onLog?: (source: string, line: string) => void;
}

/** Checks what the cluster needs before starting anything, naming what to do about each. */
function checkSetup(env: NodeJS.ProcessEnv): { haproxy: string; databaseUrl: string } {
  const haproxy = findHaproxy(env.PATH);
  if (!haproxy) throw new ClusterSetupError(`start:cluster needs HAProxy as the load balancer for the edges, and none is installed. Install it:\n  ${HAPROXY_INSTALL_HINT}`);
  const databaseUrl = env.DATABASE_URL ?? "";
  if (!/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new ClusterSetupError("start:cluster runs every service as its own process, so they need PostgreSQL: set DATABASE_URL=postgres://… (PGlite admits one process; for it, run `npm start`).");
  }
  if (!env.KAFKA_BROKERS?.trim()) throw new ClusterSetupError("start:cluster carries billing events on Kafka: set KAFKA_BROKERS (for a local broker: `npm run kafka:up`, then KAFKA_BROKERS=127.0.0.1:9092).");
  return { haproxy, databaseUrl };
}

async function portIsFree(host: string, port: number): Promise<boolean> {
  const server = createServer();
  const free = await new Promise<boolean>((resolve) => {
    server.once("listening", () => resolve(true));
    server.once("error", () => resolve(false));
    server.listen(port, host);
  });
  if (free) await new Promise<void>((resolve) => server.close(() => resolve()));
  return free;
}

export async function startCluster(options: ClusterOptions = {}): Promise<RunningCluster> {
  const env = options.env ?? process.env;
  const log = options.onLog ?? (() => {});
  const { haproxy, databaseUrl } = checkSetup(env);
  const settings = parseEnv(schema, env);
  // Every service's settings are known here: refuse a combination that permits overdraft before anything starts.
  checkSettingsAgree(timingsFrom({}, env));
  if (!(await portIsFree(settings.EDGE_HOST, settings.PORT))) throw new ClusterSetupError(`port ${settings.PORT} on ${settings.EDGE_HOST} is taken: stop what uses it, or set PORT`);
  const stack = loadStackConfig(env);
  const secrets = loadOrCreateSecrets(stack.dataDir, { internalSecret: stack.internalSecret, urlSigningSecret: stack.urlSigningSecret });
  const imageDir = settings.GENERATION_IMAGE_DIR ?? join(stack.dataDir, "images");
  mkdirSync(imageDir, { recursive: true });
  // A job may run GENERATION_JOB_TIMEOUT_MS; a process gets that and a minute to finish before it is killed.
  const stopGraceMs = settings.GENERATION_JOB_TIMEOUT_MS + 60_000;
  const processes = await ProcessStack.start({
    databaseUrl,
    dataDir: stack.dataDir,
    replicas: CLUSTER_REPLICAS,
    baseEnv: {
      ...env,
      ORVADO_INTERNAL_SECRET: secrets.internalSecret,
      ORVADO_URL_SIGNING_SECRET: secrets.urlSigningSecret,
      // The edges are reached through the balancer only, and believe its X-Forwarded-For alone.
      EDGE_HOST: "127.0.0.1",
      EDGE_TRUSTED_PROXIES: "127.0.0.1",
    },
    env: { GENERATION_IMAGE_DIR: imageDir },
    // Webhook bodies link images at the balancer unless the operator gave the public address; the
    // edges, which answer a request, link at the Host the client used.
    serviceEnv: { generation: { ORVADO_PUBLIC_URL: env.ORVADO_PUBLIC_URL || balancerUrl(settings.EDGE_HOST, settings.PORT) } },
    detached: true,
    stopGraceMs,
    onLog: (service, line) => log(service, line),
  });
  const urls = Object.fromEntries(
    Object.entries(processes.replicaPorts).map(([name, ports]) => [name, ports.map((port) => `http://127.0.0.1:${port}`)]),
  ) as Record<ServiceName, string[]>;
  let balancer: RunningBalancer;
  let models: Model[];
  try {
    models = await servedModels(urls.generation, secrets.internalSecret);
    balancer = await startBalancer(
      haproxy,
      join(stack.dataDir, "haproxy.cfg"),
      { host: settings.EDGE_HOST, port: settings.PORT, edges: processes.replicaPorts.edge.map((port) => `127.0.0.1:${port}`), longestRequestMs: settings.GENERATION_JOB_TIMEOUT_MS },
      (line) => log("haproxy", line),
    );
  } catch (error) {
    await processes.stop();
    throw error;
  }
  // For `npx orvado` in another shell: every replica's address (no secret), removed at stop.
  const removeAddresses = writeAddressesFile(stack.dataDir, { edge: balancer.url, auth: urls.auth, billing: urls.billing, generation: urls.generation });
  return {
    url: balancer.url,
    urls,
    imageDir,
    dataDir: stack.dataDir,
    kafkaBrokers: stack.kafka.brokers,
    models,
    processes,
    async stop() {
      removeAddresses();
      // The balancer first: it takes no new connection and exits once every request in flight is answered.
      await balancer.softStop();
      await processes.stop(["edge"]);
      await processes.stop();
    },
    kill() {
      balancer.kill();
      for (const pid of Object.values(processes.pids())) {
        try {
          process.kill(pid, "SIGKILL");
        } catch {
          // already gone
        }
      }
    },
  };
}
