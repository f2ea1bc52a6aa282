// Starting the servers under test, each in its own process: the fake upstream,
// Portkey's gateway and Orvado (real PostgreSQL), plus the catalog that points
// Orvado at the fake upstream.
import { mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "../services/stack/src/process-stack.ts";
import { startListeningChild, startReportingChild, type Child } from "./processes.ts";
import type { KafkaSettings } from "@orvado/events";
import { kafkaEnv } from "./kafka.ts";
import { STACK_NODE_FLAGS } from "../services/stack/src/node-flags.ts";
import { bundleOneProcess } from "../services/stack/src/build-services.ts";

const ROOT = new URL("..", import.meta.url).pathname;
export const RESULTS_DIR = join(ROOT, "bench", "results");
/** A bench helper run from its TypeScript source. */
export const TSX = ["--import", "tsx"];

export interface OrvadoInfo {
  edgeUrl: string;
  key: string;
  accountId: string;
  accounts: { accountId: string; key: string }[];
  databaseUrl: string;
  /** Images and keys of this run; the child deletes it unless it was profiled (then the parent does). */
  dataDir?: string;
  pid: number;
  /** The event stream the child's stack opened (its own report). */
  stream: "postgres" | "kafka";
  /** On Kafka: the brokers and the run's own topic and group prefix. */
  kafka?: KafkaSettings;
  /** start:cluster's topology (bench/orvado-cluster.ts): edgeUrl is the balancer's. */
  cluster?: boolean;
}

/** Starts a run with empty child logs (they are appended to during the run, by every child of that name). */
export function clearChildLogs() {
  mkdirSync(RESULTS_DIR, { recursive: true });
  for (const name of readdirSync(RESULTS_DIR)) if (name.endsWith(".log")) rmSync(join(RESULTS_DIR, name), { force: true });
}

export function logFile(name: string): string {
  mkdirSync(RESULTS_DIR, { recursive: true });
  return join(RESULTS_DIR, `${name}.log`);
}

/** The openai simulator of libs/simulators (its own CLI), answering after latencyMs. */
export function startSimulator(latencyMs: number): Promise<Child<{ baseUrl: string; pid: number }>> {
  return startReportingChild({
    name: "openai simulator",
    args: [...TSX, join(ROOT, "libs", "simulators", "src", "serve.ts"), "openai", "--latency-ms", String(latencyMs)],
    logFile: logFile("simulator"),
    // serve.ts prints one JSON line with its address.
    readyLine: (line) => (line.startsWith("{") && line.includes('"baseUrl"') ? JSON.parse(line) : null),
  });
}

/** BENCH_IMAGE=photo makes the fake upstream answer photo-sized PNGs (fake-upstream.ts) instead of a few kB. */
export function startUpstream(latencyMs = 0, image = process.env.BENCH_IMAGE ?? "solid"): Promise<Child<{ url: string; pid: number }>> {
  return startReportingChild({
    name: "fake upstream",
    args: [...TSX, join(ROOT, "bench", "upstream-main.ts"), "--latency-ms", String(latencyMs), "--image", image],
    logFile: logFile("upstream"),
  });
}

const bundles = new Map<string, Promise<string>>();

/**
 * A gateway under test (`bench/<name>.ts` of the checkout at `root`) bundled as
 * npm start bundles the stack (build-services.ts bundleOneProcess), once per run,
 * into `<root>/bench/dist`: it runs with plain node, as npm start runs Orvado.
 */
export function benchBundle(name: string, root = ROOT): Promise<string> {
  const entry = join(root, "bench", `${name}.ts`);
  let bundle = bundles.get(entry);
  if (!bundle) {
    bundle = bundleOneProcess(entry, join(root, "bench", "dist"));
    bundles.set(entry, bundle);
  }
  return bundle;
}

/**
 * bench/floor-gateway.ts: a bare node:http gateway doing only the durable steps (npm run bench:floor).
 * `nodeFlags`: more Node flags for the gateway's process (bench:cpu's --perf-basic-prof).
 */
export async function startFloorGateway(upstreamUrl: string, databaseUrl: string, dataDir: string, nodeFlags: readonly string[] = []): Promise<Child<{ url: string; pid: number }>> {
  return startReportingChild({
    name: "floor gateway",
    args: [...nodeFlags, await benchBundle("floor-gateway"), "--upstream", upstreamUrl, "--database", databaseUrl, "--data-dir", dataDir],
    logFile: logFile("floor-gateway"),
  });
}

export async function startPortkey(): Promise<Child<{ url: string }>> {
  const port = await freePort();
  return startListeningChild({
    name: "Portkey gateway",
    args: [join(ROOT, "node_modules", "@portkey-ai", "gateway", "build", "start-server.js"), `--port=${port}`, "--headless"],
    probeUrl: `http://127.0.0.1:${port}/`,
    logFile: logFile("portkey"),
  });
}

/** The public model the benchmarks ask Orvado for. */
export const BENCH_MODEL = "beta";

/** One openai-compatible channel at the fake upstream (generation's catalog format, config/models.example.json). */
export function fakeUpstreamChannel(url: string, capacity: number, extra: { name?: string; priority?: number; timeoutMs?: number } = {}) {
  return {
    name: "fake-upstream",
    provider: "openai-compatible",
    baseUrl: `${url}/v1`,
    upstreamModel: "gpt-image-1",
    apiKeyEnv: "BENCH_UPSTREAM_KEY",
    priority: 1,
    capacity,
    allowPrivateNetwork: true,
    ...extra,
  };
}

/** Writes a catalog ({ models }) to a temporary file of this run, deleted when the run exits. */
export function writeCatalogFile(models: unknown[], name = "models"): string {
  const path = join(tmpdir(), `orvado-bench-${name}-${process.pid}.json`);
  writeFileSync(path, JSON.stringify({ models }, null, 2));
  process.once("exit", () => rmSync(path, { force: true }));
  return path;
}

/**
 * A catalog with one model served by openai-compatible channels at the fake
 * upstream: one channel per URL, tried in the order given (priority 1, 2, …),
 * each with an equal share of the capacity (rounded up). Several upstream
 * processes let a run hold more calls than one process has descriptors for:
 * generation fills the first channel, then the next.
 */
export function writeBenchCatalog(upstreamUrls: string | string[], capacity: number, extra: { timeoutMs?: number } = {}): string {
  const urls = typeof upstreamUrls === "string" ? [upstreamUrls] : upstreamUrls;
  const channels = urls.map((url, index) =>
    // Channel names must differ within a model; a lone channel keeps the name earlier runs had.
    fakeUpstreamChannel(url, Math.ceil(capacity / urls.length), { name: urls.length === 1 ? "fake-upstream" : `fake-upstream-${index + 1}`, priority: index + 1, ...extra }),
  );
  return writeCatalogFile([{ id: BENCH_MODEL, family: "beta", tiers: ["1K"], channels }]);
}

export interface OrvadoOptions {
  modelsFile: string;
  /** Write a V8 CPU profile of the Orvado process into this directory on exit. */
  cpuProfileDir?: string;
  /** More Node flags, before the stack's own (bench:cpu's --perf-basic-prof). */
  nodeFlags?: readonly string[];
  env?: NodeJS.ProcessEnv;
  /** Kafka as the event stream; without it the Postgres log, even when the parent has KAFKA_BROKERS set. */
  kafka?: KafkaSettings;
}

/**
 * What every benchmarked Orvado is given besides its catalog: the fake upstream's
 * key, leave to call an upstream on 127.0.0.1, and no per-account job limit (one
 * account carries all of a run's connections).
 */
export const BENCH_SERVICE_ENV: Readonly<NodeJS.ProcessEnv> = {
  BENCH_UPSTREAM_KEY: "sk-bench-not-a-real-key",
  GENERATION_ALLOW_PRIVATE_UPSTREAMS: "true",
  GENERATION_ACCOUNT_MAX_CONCURRENT_JOBS: "0",
};

export async function startOrvado(options: OrvadoOptions): Promise<Child<OrvadoInfo>> {
  const profile = options.cpuProfileDir ? ["--cpu-prof", `--cpu-prof-dir=${options.cpuProfileDir}`] : [];
  const child = await startReportingChild<OrvadoInfo>({
    name: options.kafka ? "Orvado on Kafka" : "Orvado",
    // Bundled, with the flags npm start runs the stack with, so that what is measured is what runs.
    args: [...profile, ...(options.nodeFlags ?? []), ...STACK_NODE_FLAGS, await benchBundle("orvado-main")],
    env: {
      ORVADO_MODELS_FILE: options.modelsFile,
      ...BENCH_SERVICE_ENV,
      ...(options.cpuProfileDir ? { BENCH_PARENT_DELETES_DATA: "1" } : {}),
      ...kafkaEnv(options.kafka),
      ...options.env,
    },
    logFile: logFile(options.kafka ? "orvado-kafka" : "orvado"),
  });
  const wanted = options.kafka ? "kafka" : "postgres";
  if (child.info.stream !== wanted) {
    await child.stop();
    throw new Error(`Orvado opened the ${child.info.stream} stream, not ${wanted}`);
  }
  return { ...child, info: { ...child.info, kafka: options.kafka } };
}
