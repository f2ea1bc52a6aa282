// `npm run bench:soak`: SOAK_COUNT requests (default 10,000) held open at once
// against Orvado, whose upstream (the openai simulator of libs/simulators) answers
// each after SOAK_LATENCY_MS (default 30 s). Reports successes, errors, charges
// (they must equal the successes) and the peak RSS summed over all Orvado
// processes (target ≤ 1 GiB). Orvado runs as its four services' own processes
// (bench/orvado-split.ts), the RSS summed over the four.
//
// Environment: SOAK_COUNT, SOAK_LATENCY_MS, SOAK_ACCOUNTS (default 100: the requests
// are spread over this many funded accounts; 1 = one customer), SOAK_RAMP_MS (default
// 10,000: the requests start evenly over this time, so the listen backlog is not
// flooded), SOAK_UPSTREAM ("simulator" (default) or "bench": bench/upstream-main.ts),
// SOAK_RESPONSE_FORMAT ("url", the default, or "b64_json"),
// BENCH_DB_SERVER.
import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync, mkdirSync } from "node:fs";
import { Agent, request as httpRequest } from "node:http";
import { join } from "node:path";
import { cpus, totalmem } from "node:os";
import { settledCharges } from "./ledger-check.ts";
import { watchPeakRss, type Child } from "./processes.ts";
import { startSplitOrvado, type SplitOrvado } from "./orvado-split.ts";
import { BENCH_MODEL, RESULTS_DIR, clearChildLogs, startSimulator, startUpstream, writeBenchCatalog, type OrvadoInfo } from "./servers.ts";
import { fixed, formatTable, mib, percentile, since } from "./stats.ts";
import { SERVICE_NODE_FLAGS } from "../services/stack/src/node-flags.ts";

const COUNT = Number(process.env.SOAK_COUNT ?? 10_000);
const LATENCY_MS = Number(process.env.SOAK_LATENCY_MS ?? 30_000);
const ACCOUNTS = Number(process.env.SOAK_ACCOUNTS ?? 100);
const RAMP_MS = Number(process.env.SOAK_RAMP_MS ?? 10_000);
const UPSTREAM = process.env.SOAK_UPSTREAM ?? "simulator";
// The default answer is a link (docs/api.md#success-200); b64_json makes every held request also hold its image.
const RESPONSE_FORMAT = process.env.SOAK_RESPONSE_FORMAT ?? "url";
// The goal: 10,000 held 30-s jobs in at most 1 GiB summed over Orvado's processes (docs/performance.md#npm-run-benchsoak-10000-requests-held-open).
const RSS_TARGET_BYTES = 1024 ** 3;
const started = Date.now();
const log = (message: string) => process.stderr.write(`[soak ${since(started)}] ${message}\n`);

function openFilesLimit(): number {
  const line = readFileSync("/proc/self/limits", "utf8").split("\n").find((l) => l.startsWith("Max open files"));
  return Number(line?.split(/\s+/)[3] ?? 1024);
}

/**
 * Each process holds about one descriptor per request (the driver, the edge, the
 * upstream, generation's upstream calls). With a lower limit the script re-runs
 * itself under `prlimit --nofile`, which needs root with CAP_SYS_RESOURCE or a
 * hard limit that allows it; returns true if it did.
 */
function rerunWithMoreFiles(): boolean {
  const needed = COUNT + 2_000;
  if (openFilesLimit() >= needed || process.env.SOAK_RERUN === "1") return false;
  log(`open-files limit ${openFilesLimit()} < ${needed}: re-running under prlimit --nofile=${needed}`);
  const result = spawnSync("prlimit", [`--nofile=${needed}:${needed}`, "--", process.execPath, ...process.execArgv, ...process.argv.slice(1)], {
    stdio: "inherit",
    env: { ...process.env, SOAK_RERUN: "1" },
  });
  if (result.error) throw new Error(`prlimit failed (${result.error.message}); raise ulimit -n to ${needed} and run again`);
  process.exitCode = result.status ?? 1;
  return true;
}

/** The upstream that answers after LATENCY_MS: the shared simulator, or the bench's own fake. */
async function startSlowUpstream(): Promise<Child<{ url: string }>> {
  if (UPSTREAM === "bench") return startUpstream(LATENCY_MS);
  const child = await startSimulator(LATENCY_MS);
  return { ...child, info: { url: child.info.baseUrl.replace(/\/v1\/?$/, "") } };
}

interface Outcome {
  /** HTTP status, or the socket error's code when no answer came. */
  status: number | string;
  ms: number;
}

/** One generation request on its own connection, as 10,000 separate clients would. */
function generate(agent: Agent, info: OrvadoInfo, key: string): Promise<Outcome> {
  const body = JSON.stringify({ model: BENCH_MODEL, prompt: "a slow lighthouse", size: "1024x1024", response_format: RESPONSE_FORMAT });
  const url = new URL(`${info.edgeUrl}/v1/images/generations`);
  const start = performance.now();
  return new Promise((resolve) => {
    const req = httpRequest(
      { host: url.hostname, port: url.port, path: url.pathname, method: "POST", agent, headers: { "content-type": "application/json", authorization: `Bearer ${key}` } },
      (res) => {
        res.resume();
        res.on("end", () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - start }));
        res.on("error", (error: NodeJS.ErrnoException) => resolve({ status: error.code ?? error.message, ms: performance.now() - start }));
      },
    );
    req.setTimeout(15 * 60_000, () => req.destroy(new Error("timeout")));
    req.on("error", (error: NodeJS.ErrnoException) => resolve({ status: error.code ?? error.message, ms: performance.now() - start }));
    req.end(body);
  });
}

async function holdAll(info: OrvadoInfo, rssNow: () => number): Promise<Outcome[]> {
  const agent = new Agent({ keepAlive: false, maxSockets: Infinity });
  const keys = info.accounts.map((account) => account.key);
  let inFlight = 0;
  let peakInFlight = 0;
  const progress = setInterval(() => log(`${inFlight} requests open (peak ${peakInFlight}); Orvado RSS now ${mib(rssNow())}`), 5_000);
  try {
    return await Promise.all(
      Array.from({ length: COUNT }, async (_, index) => {
        await new Promise((resolve) => setTimeout(resolve, (index / COUNT) * RAMP_MS));
        inFlight += 1;
        peakInFlight = Math.max(peakInFlight, inFlight);
        const outcome = await generate(agent, info, keys[index % keys.length]!);
        inFlight -= 1;
        return outcome;
      }),
    );
  } finally {
    clearInterval(progress);
    log(`peak ${peakInFlight} requests open at once`);
  }
}

async function main() {
  clearChildLogs();
  const upstream = await startSlowUpstream();
  let orvado: SplitOrvado | null = null;
  try {
    const catalog = writeBenchCatalog(upstream.info.url, Math.max(COUNT, 1), { timeoutMs: LATENCY_MS * 4 });
    orvado = await startSplitOrvado({ modelsFile: catalog, accounts: ACCOUNTS });
    const rss = watchPeakRss(orvado.pids);
    const idleRss = rss.peak();
    log(`Orvado up (RSS ${mib(idleRss)}); sending ${COUNT} requests over ${RAMP_MS} ms to an upstream that answers after ${LATENCY_MS} ms`);
    const outcomes = await holdAll(orvado.info, rss.current);
    const peakRss = rss.stop();
    const peakByService = Object.fromEntries(orvado.services.map((service, index) => [service, rss.peakByPid().get(orvado!.pids[index]!) ?? 0]));
    const ok = outcomes.filter((o) => o.status === 200);
    const byStatus: Record<string, number> = {};
    for (const outcome of outcomes) byStatus[String(outcome.status)] = (byStatus[String(outcome.status)] ?? 0) + 1;
    log("waiting for settlement");
    const charges = await settledCharges(orvado.info.databaseUrl, 300_000);
    const times = ok.map((o) => o.ms).sort((a, b) => a - b);
    const rows: (string | number)[][] = [
      ["requests", "successes", "errors", "charged", "charges = successes", "p50 s", "p99 s", "peak RSS (all Orvado processes)", "RSS ≤ 1 GiB"],
      [COUNT, ok.length, COUNT - ok.length, charges.charged, charges.charged === ok.length ? "yes" : "NO", fixed(percentile(times, 50) / 1000), fixed(percentile(times, 99) / 1000), mib(peakRss), peakRss <= RSS_TARGET_BYTES ? "yes" : "NO"],
    ];
    const perService = Object.entries(peakByService).map(([service, bytes]) => `${service} ${mib(bytes)}`).join(", ");
    process.stdout.write(
      `\n${formatTable(rows)}\nanswers by status: ${JSON.stringify(byStatus)}; idle RSS before the load ${mib(idleRss)}; ` +
        `each service's own peak: ${perService}; pending holds ${charges.pending}\n`,
    );
    mkdirSync(RESULTS_DIR, { recursive: true });
    const file = join(RESULTS_DIR, `soak-${new Date().toISOString().replace(/[:.]/g, "-")}.json`);
    const summary = {
      when: new Date().toISOString(),
      machine: { cpus: cpus().length, cpuModel: cpus()[0]?.model, memoryBytes: totalmem() },
      settings: {
        count: COUNT,
        latencyMs: LATENCY_MS,
        accounts: ACCOUNTS,
        rampMs: RAMP_MS,
        upstream: UPSTREAM,
        responseFormat: RESPONSE_FORMAT,
        // What the four processes ran with: their own flags (node-flags.ts) and any given for this run.
        serviceNodeFlags: SERVICE_NODE_FLAGS,
        serviceNodeOptions: process.env.BENCH_SERVICE_NODE_OPTIONS ?? "",
      },
      successes: ok.length,
      errors: COUNT - ok.length,
      byStatus,
      charges: { ...charges, capturedMicros: String(charges.capturedMicros) },
      chargesEqualSuccesses: charges.charged === ok.length,
      latencyS: { p50: percentile(times, 50) / 1000, p99: percentile(times, 99) / 1000 },
      rssBytes: { idle: idleRss, peak: peakRss, peakByService },
    };
    writeFileSync(file, JSON.stringify(summary, null, 2));
    log(`wrote ${file}`);
  } finally {
    await orvado?.stop();
    await upstream.stop();
  }
}

if (!rerunWithMoreFiles()) await main();
