// `npm run bench:soak`: SOAK_COUNT requests (default 10,000) held open at once
// against Orvado, whose upstream (the openai simulator of libs/simulators) answers
// each after SOAK_LATENCY_MS (default 30 s). Reports successes, errors, charges
// (they must equal the successes) and the peak RSS summed over all Orvado
// processes (target ≤ 1 GiB). Orvado runs as its four services' own processes
// (bench/orvado-split.ts), the RSS summed over them.
//
// Every process that holds a socket per request (the load driver, the edge,
// generation, the upstream) must stay under its open-files limit, and each edge
// and upstream, which many connect to, under the source ports Linux gives one
// destination. Past that, the run splits the work: several edge and generation
// processes, several load drivers (bench/soak-driver.ts) and several upstreams
// (one catalog channel each), as many as the limits need. Besides the above it
// reports that split, the peak of requests open at once, each process's peak of
// open descriptors next to its limit, and the source port range.
//
// Environment: SOAK_COUNT, SOAK_LATENCY_MS, SOAK_ACCOUNTS (default 100: the requests
// are spread over this many funded accounts; 1 = one customer), SOAK_RAMP_MS (default
// 10,000: the requests start evenly over this time, so the listen backlog is not
// flooded), SOAK_UPSTREAM ("simulator" (default) or "bench": bench/upstream-main.ts),
// SOAK_RESPONSE_FORMAT ("url", the default, or "b64_json"), SOAK_STREAM ("1": every request
// streams, stream: true, and counts as answered once its completed event arrives), SOAK_REPLICAS (processes
// of the edge and of generation), SOAK_DRIVERS (load driver processes), SOAK_UPSTREAMS
// (upstream processes; the last three computed from the open-files limit when not set),
// BENCH_DB_SERVER, BENCH_SERVICE_NODE_OPTIONS (NODE_OPTIONS of the service processes),
// SOAK_SERVICE_ENV (NAME=value pairs, separated by spaces, given to every service process).
import { spawnSync } from "node:child_process";
import { writeFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { cpus, totalmem } from "node:os";
import { settledCharges, type Charges } from "./ledger-check.ts";
import { killOnExit, openFilesLimit, watchPeakFds, watchPeakPss, watchPeakRss, type Child } from "./processes.ts";
import { startSplitOrvado, type SplitOrvado } from "./orvado-split.ts";
import { BENCH_MODEL, RESULTS_DIR, clearChildLogs, startSimulator, startUpstream, writeBenchCatalog } from "./servers.ts";
import { startDrivers, type Drivers, type Outcome, type SoakLoad } from "./soak-driver.ts";
import { fixed, formatTable, mib, percentile, since } from "./stats.ts";
import { readTcpCounters, tcpCountersSince, type TcpCounters } from "./tcp-counters.ts";
import { SERVICE_NODE_FLAGS } from "../services/stack/src/node-flags.ts";
import { ephemeralPortRange, replicaName } from "../services/stack/src/process-stack.ts";
import { MAX_CHANNEL_TIMEOUT_MS } from "../services/generation/src/catalog.ts";

const COUNT = Number(process.env.SOAK_COUNT ?? 10_000);
const LATENCY_MS = Number(process.env.SOAK_LATENCY_MS ?? 30_000);
const ACCOUNTS = Number(process.env.SOAK_ACCOUNTS ?? 100);
const RAMP_MS = Number(process.env.SOAK_RAMP_MS ?? 10_000);
const UPSTREAM = process.env.SOAK_UPSTREAM ?? "simulator";
// The default answer is a link (docs/api.md#success-200); b64_json makes every held request also hold its image.
const RESPONSE_FORMAT = process.env.SOAK_RESPONSE_FORMAT ?? "url";
const STREAM = process.env.SOAK_STREAM === "1";
// The goals: 10,000 held 30-s jobs in at most 1 GiB summed over Orvado's processes, 50,000 held 240-s jobs in
// at most 3 GiB (docs/performance.md#npm-run-benchsoak-10000-requests-held-open).
const RSS_TARGET_BYTES = (COUNT > 10_000 ? 3 : 1) * 1024 ** 3;
// What a process keeps besides one descriptor per held request (listening sockets, database pools, its own files),
// and the source ports left to other connections to the same destination.
const MARGIN = 2_000;
const started = Date.now();
const log = (message: string) => process.stderr.write(`[soak ${since(started)}] ${message}\n`);

/** How many processes of each kind share the held requests. */
interface Split {
  /** Processes of the edge, and as many of generation. */
  replicas: number;
  /** Load drivers: one runs in this process, more are forked. */
  drivers: number;
  /** Upstream processes, one catalog channel each. */
  upstreams: number;
}

interface PortRange {
  low: number;
  high: number;
  /** Connections one destination address:port can be given from this machine (one source port each). */
  perDestination: number;
}

// Where Linux picks the source ports of outgoing connections, as the process stack reads it.
const [portsLow, portsHigh] = await ephemeralPortRange();
const PORTS: PortRange = { low: portsLow, high: portsHigh, perDestination: portsHigh - portsLow + 1 };

/** Of a limit on descriptors or ports, what held requests may use: all but the margin (a tenth of a small limit). */
const usable = (limit: number) => limit - Math.min(MARGIN, Math.floor(limit / 10));

/** Processes needed for COUNT held sockets when each may have `limit` descriptors, or be given `limit` connections. */
function processesFor(limit: number): number {
  return Math.max(1, Math.ceil(COUNT / usable(limit)));
}

function countFromEnv(name: string, computed: number): number {
  const text = process.env[name];
  if (text === undefined || text === "") return computed;
  const value = Number(text);
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a whole number ≥ 1, not ${JSON.stringify(text)}`);
  return value;
}

/**
 * Every edge, generation, driver and upstream process holds one socket per
 * request of its share, so each kind needs enough processes to stay under the
 * open-files limit; each edge and upstream is also one destination that all the
 * drivers (or all of generation) connect to, so they need enough for the source
 * ports too. The hard limit counts: a lower soft limit is raised to what the
 * split needs (rerunWithMoreFiles), which needs no privileges.
 */
function chooseSplit(): Split {
  const byFiles = processesFor(openFilesLimit("self", "hard"));
  const byFilesAndPorts = Math.max(byFiles, processesFor(PORTS.perDestination));
  return {
    replicas: countFromEnv("SOAK_REPLICAS", byFilesAndPorts),
    drivers: countFromEnv("SOAK_DRIVERS", byFiles),
    upstreams: countFromEnv("SOAK_UPSTREAMS", byFilesAndPorts),
  };
}

const plural = (count: number, one: string, many = `${one}s`) => `${count} ${count === 1 ? one : many}`;

function describeSplit(split: Split): string {
  return `${plural(split.replicas, "edge process", "edge processes")} and as many of generation, ${plural(split.drivers, "load driver")}, ${plural(split.upstreams, "upstream")} (${UPSTREAM})`;
}

/** The most requests one process holds a socket for: the share of the kind split least. */
const largestShare = (split: Split) => Math.ceil(COUNT / Math.min(split.replicas, split.drivers, split.upstreams));

/**
 * The split computed from the limits needs no more descriptors than the hard
 * limit, but maybe more than the soft one; an explicit SOAK_REPLICAS, SOAK_DRIVERS
 * or SOAK_UPSTREAMS may need more than either. Then the script re-runs itself,
 * with the same split, under `prlimit --nofile`, which needs root with
 * CAP_SYS_RESOURCE or a hard limit that allows it; returns true if it did.
 */
function rerunWithMoreFiles(split: Split): boolean {
  const share = largestShare(split);
  if (share <= usable(openFilesLimit()) || process.env.SOAK_RERUN === "1") return false;
  // The whole margin if the hard limit has room for it, else up to the hard limit: raising the soft limit that far needs no privileges.
  const hard = openFilesLimit("self", "hard");
  const needed = share <= usable(hard) ? Math.min(hard, share + MARGIN) : share + MARGIN;
  log(`open-files limit ${openFilesLimit()} < ${needed} with ${describeSplit(split)}: re-running under prlimit --nofile=${needed}`);
  const result = spawnSync("prlimit", [`--nofile=${needed}:${needed}`, "--", process.execPath, ...process.execArgv, ...process.argv.slice(1)], {
    stdio: "inherit",
    // The split chosen here, not one recomputed from the raised limit.
    env: { ...process.env, SOAK_RERUN: "1", SOAK_REPLICAS: String(split.replicas), SOAK_DRIVERS: String(split.drivers), SOAK_UPSTREAMS: String(split.upstreams) },
  });
  if (result.error) throw new Error(`prlimit failed (${result.error.message}); raise ulimit -n to ${needed} or split more (SOAK_REPLICAS, SOAK_DRIVERS, SOAK_UPSTREAMS) and run again`);
  process.exitCode = result.status ?? 1;
  return true;
}

/** No limit prlimit can raise: an edge or upstream given more connections than there are source ports refuses the rest (EADDRNOTAVAIL). */
function warnOfSourcePorts(split: Split) {
  const perDestination = Math.ceil(COUNT / Math.min(split.replicas, split.upstreams));
  if (perDestination > PORTS.perDestination) {
    log(`warning: ${perDestination} connections to one edge or upstream process, more than the ${PORTS.perDestination} source ports one destination can be given; raise SOAK_REPLICAS or SOAK_UPSTREAMS`);
  }
}

/** The channel's time limit: well past the upstream's answer time, within the most a catalog allows. */
const channelTimeoutMs = () => Math.min(LATENCY_MS * 4, MAX_CHANNEL_TIMEOUT_MS);

/** The upstream that answers after LATENCY_MS: the shared simulator, or the bench's own fake. */
async function startSlowUpstream(): Promise<Child<{ url: string }>> {
  if (UPSTREAM === "bench") return startUpstream(LATENCY_MS);
  const child = await startSimulator(LATENCY_MS);
  return { ...child, info: { url: child.info.baseUrl.replace(/\/v1\/?$/, "") } };
}

/** `count` upstreams, one after another; if one fails to start, those already started are stopped. */
async function startSlowUpstreams(count: number): Promise<Child<{ url: string }>[]> {
  const upstreams: Child<{ url: string }>[] = [];
  try {
    while (upstreams.length < count) {
      const upstream = await startSlowUpstream();
      killOnExit(upstream.process);
      upstreams.push(upstream);
    }
    return upstreams;
  } catch (error) {
    await Promise.all(upstreams.map((upstream) => upstream.stop()));
    throw error;
  }
}

function soakLoad(orvado: SplitOrvado): SoakLoad {
  return {
    count: COUNT,
    rampMs: RAMP_MS,
    edgeUrls: orvado.edgeUrls,
    keys: orvado.info.accounts.map((account) => account.key),
    body: JSON.stringify({ model: BENCH_MODEL, prompt: "a slow lighthouse", size: "1024x1024", response_format: RESPONSE_FORMAT, ...(STREAM && { stream: true }) }),
  };
}

async function holdAll(drivers: Drivers, load: SoakLoad, rssNow: () => number): Promise<Outcome[]> {
  const progress = setInterval(() => log(`${drivers.open.now()} requests open (peak ${drivers.open.peak()}); Orvado RSS now ${mib(rssNow())}`), 5_000);
  try {
    return await drivers.hold(load);
  } finally {
    clearInterval(progress);
    log(`peak ${drivers.open.peak()} requests open at once`);
  }
}

/** A process holding one socket per request of its share, and what it peaked at. */
interface Holder {
  name: string;
  /** Its soft limit on open files, read while it ran. */
  limit: number;
  peakFiles: number;
  /** Sampled for Orvado's processes only. */
  peakRss?: number;
}

interface Measured {
  outcomes: Outcome[];
  idleRss: number;
  peakRss: number;
  /** The peak of the summed proportional set sizes: shared pages counted once (processes.ts pssBytes). */
  peakPss: number;
  peakOpenRequests: number;
  holders: Holder[];
  /** What the kernel's TCP counters rose by while the load ran (tcp-counters.ts); null off Linux. */
  tcp: TcpCounters | null;
}

/** Holds the load while sampling RSS (Orvado's processes, 4 times a second) and open descriptors (every holder, once a second). */
async function measure(orvado: SplitOrvado, upstreams: Child<{ url: string }>[], drivers: Drivers): Promise<Measured> {
  const processes = [...orvado.processes, ...upstreams.map((upstream, index) => ({ name: replicaName("upstream", index + 1), pid: upstream.process.pid! })), ...drivers.processes];
  const limits = processes.map(({ pid }) => openFilesLimit(pid));
  const orvadoPids = orvado.processes.map(({ pid }) => pid);
  const rss = watchPeakRss(orvadoPids);
  const pss = watchPeakPss(orvadoPids);
  const files = watchPeakFds(processes.map(({ pid }) => pid));
  const idleRss = rss.peak();
  log(`Orvado up (RSS ${mib(idleRss)}); sending ${COUNT} requests over ${RAMP_MS} ms to an upstream that answers after ${LATENCY_MS} ms`);
  const tcpBefore = readTcpCounters();
  const outcomes = await holdAll(drivers, soakLoad(orvado), rss.current).finally(() => {
    rss.stop();
    pss.stop();
    files.stop();
  });
  const tcp = tcpCountersSince(tcpBefore, readTcpCounters());
  const holders = processes.map(({ name, pid }, index) => ({
    name,
    limit: limits[index]!,
    peakFiles: files.peakByPid().get(pid) ?? 0,
    peakRss: orvadoPids.includes(pid) ? (rss.peakByPid().get(pid) ?? 0) : undefined,
  }));
  return { outcomes, idleRss, peakRss: rss.peak(), peakPss: pss.peak(), peakOpenRequests: drivers.open.peak(), holders, tcp };
}

/** Keyed by process (edge, edge#2, …): with one process per service, the four services. */
function peakRssByProcess(holders: Holder[]): Record<string, number> {
  const byProcess: Record<string, number> = {};
  for (const holder of holders) if (holder.peakRss !== undefined) byProcess[holder.name] = holder.peakRss;
  return byProcess;
}

/** What a run found, as written to bench/results/soak-*.json. */
function resultsOf(measured: Measured, charges: Charges) {
  const { outcomes, holders } = measured;
  const ok = outcomes.filter((o) => o.status === 200);
  const byStatus: Record<string, number> = {};
  for (const outcome of outcomes) byStatus[String(outcome.status)] = (byStatus[String(outcome.status)] ?? 0) + 1;
  const times = ok.map((o) => o.ms).sort((a, b) => a - b);
  return {
    successes: ok.length,
    errors: COUNT - ok.length,
    byStatus,
    charges: { ...charges, capturedMicros: String(charges.capturedMicros) },
    chargesEqualSuccesses: charges.charged === ok.length,
    latencyS: { p50: percentile(times, 50) / 1000, p99: percentile(times, 99) / 1000 },
    rssBytes: { idle: measured.idleRss, peak: measured.peakRss, peakByService: peakRssByProcess(holders) },
    pssBytes: { peak: measured.peakPss },
    peakOpenRequests: measured.peakOpenRequests,
    openFiles: Object.fromEntries(holders.map((holder) => [holder.name, { peak: holder.peakFiles, limit: holder.limit }])),
    ephemeralPorts: PORTS,
    tcpDuringLoad: measured.tcp,
  };
}

type Results = ReturnType<typeof resultsOf>;

const percentOf = (part: number, whole: number) => (Number.isFinite(whole) && whole > 0 ? `${Math.round((part / whole) * 100)}%` : "n/a");

/** Each holder's peaks next to its limit: which process the run came closest to exhausting. */
function holdersTable(holders: Holder[]): string {
  const rows: (string | number)[][] = [["process", "peak RSS", "peak open files", "open-files limit", "of limit"]];
  for (const holder of holders) rows.push([holder.name, holder.peakRss === undefined ? "-" : mib(holder.peakRss), holder.peakFiles, holder.limit, percentOf(holder.peakFiles, holder.limit)]);
  return formatTable(rows);
}

/** The kernel's counts over the load: a client whose handshake met a full accept queue, and resets sent. */
function tcpLine(tcp: TcpCounters | null): string {
  if (!tcp) return "the kernel's TCP counters could not be read";
  return `the kernel, over the load (every listener on this machine): ${tcp.listenOverflows} accept-queue overflows, ${tcp.listenDrops} listen drops, ${tcp.resetsSent} resets sent`;
}

function printReport(split: Split, measured: Measured, results: Results) {
  const { rssBytes, charges } = results;
  const rows: (string | number)[][] = [
    ["requests", "successes", "errors", "charged", "charges = successes", "p50 s", "p99 s", "peak RSS (all Orvado processes)", "peak PSS", `RSS ≤ ${mib(RSS_TARGET_BYTES)}`],
    [COUNT, results.successes, results.errors, charges.charged, results.chargesEqualSuccesses ? "yes" : "NO", fixed(results.latencyS.p50), fixed(results.latencyS.p99), mib(rssBytes.peak), mib(results.pssBytes.peak), rssBytes.peak <= RSS_TARGET_BYTES ? "yes" : "NO"],
  ];
  const perService = Object.entries(rssBytes.peakByService).map(([service, bytes]) => `${service} ${mib(bytes)}`).join(", ");
  const ports = results.ephemeralPorts;
  process.stdout.write(
    `\n${formatTable(rows)}\nanswers by status: ${JSON.stringify(results.byStatus)}; idle RSS before the load ${mib(rssBytes.idle)}; ` +
      `each service's own peak: ${perService}; pending holds ${charges.pending}\n` +
      `split: ${describeSplit(split)}; peak ${results.peakOpenRequests} requests open at once over all drivers; ` +
      `source ports ${ports.low}-${ports.high} (${ports.perDestination} per destination)\n${tcpLine(results.tcpDuringLoad)}\n\n${holdersTable(measured.holders)}\n`,
  );
}

function writeSummary(split: Split, results: Results) {
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
      stream: STREAM,
      // What the four services' processes ran with: their own flags (node-flags.ts) and any given for this run.
      serviceNodeFlags: SERVICE_NODE_FLAGS,
      serviceNodeOptions: process.env.BENCH_SERVICE_NODE_OPTIONS ?? "",
      ...split,
    },
    ...results,
  };
  writeFileSync(file, JSON.stringify(summary, null, 2));
  log(`wrote ${file}`);
}

async function main(split: Split) {
  clearChildLogs();
  warnOfSourcePorts(split);
  log(`split: ${describeSplit(split)}`);
  const upstreams = await startSlowUpstreams(split.upstreams);
  let orvado: SplitOrvado | null = null;
  let drivers: Drivers | null = null;
  try {
    const catalog = writeBenchCatalog(upstreams.map((upstream) => upstream.info.url), Math.max(COUNT, 1), { timeoutMs: channelTimeoutMs() });
    orvado = await startSplitOrvado({ modelsFile: catalog, accounts: ACCOUNTS, replicas: { edge: split.replicas, generation: split.replicas } });
    drivers = await startDrivers(split.drivers);
    const measured = await measure(orvado, upstreams, drivers);
    log("waiting for settlement");
    const charges = await settledCharges(orvado.info.databaseUrl, 300_000);
    const results = resultsOf(measured, charges);
    printReport(split, measured, results);
    writeSummary(split, results);
  } finally {
    await drivers?.stop();
    await orvado?.stop();
    await Promise.all(upstreams.map((upstream) => upstream.stop()));
  }
}

const split = chooseSplit();
if (!rerunWithMoreFiles(split)) await main(split);
