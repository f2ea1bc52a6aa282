// `npm run bench:mix`: a realistic mix of jobs through four legs in front of the
// same fake upstream (photo-sized PNGs, bench/fake-upstream.ts "photo"):
//   direct          the upstream called with no gateway: the limit;
//   Portkey         Portkey's gateway in front of it;
//   Orvado          the whole stack in one process (as npm start), on PostgreSQL and Kafka;
//   Orvado cluster  npm run start:cluster's topology (bench/orvado-cluster.ts), skipped
//                   with the reason printed without haproxy or Kafka.
// The jobs (bench/mix-jobs.ts, one seeded sequence per round, the same for every leg):
// the spec's times per image (beta 10-60 s, alpha 30-70 s) divided by
// BENCH_MIX_TIME_FACTOR, sizes 1K/2K/4K, 70% response_format url (the client downloads
// every image, bench/mix-load.ts) and 30% b64_json, 5% refused by the gateway itself
// (an unknown model) and 5% failed by the upstream (500).
// Per leg, the medians of its rounds (the legs interleaved, round by round): images
// delivered per second (also ÷ the direct leg's), CPU-seconds per 1,000 images over
// the leg's processes (for Orvado also PostgreSQL's, its database's backends and the
// server's own processes, and the local Kafka broker's JVM; a round ends once billing
// has settled it), the peak of the summed RSS of the leg's own processes (the
// upstream's and the gateway's), and the p99 of the time the gateway added over the
// upstream's own time per job (a url answer's POST only, not its download). Prints
// the table and writes bench/results/mix-<time>.json.
//
// Environment: BENCH_MIX_SECONDS (per round, default 30; open requests then finish),
// BENCH_MIX_ROUNDS (default 3), BENCH_MIX_CONNECTIONS (default 48),
// BENCH_MIX_TIME_FACTOR (default 100: beta 0.1-0.6 s, alpha 0.3-0.7 s),
// BENCH_MIX_WARMUP_S (default 5, per leg, not measured), BENCH_MIX_SEED (default 1),
// KAFKA_BROKERS (bench/kafka.ts; without a broker Orvado runs on the Postgres log and
// the cluster is skipped), BENCH_DB_SERVER (a fresh database is made there per Orvado).
import { cpus, loadavg, release, totalmem } from "node:os";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { KafkaSettings } from "@orvado/events";
import { benchKafka, describeKafka } from "./kafka.ts";
import { clusterMissing, startOrvadoCluster } from "./orvado-cluster.ts";
import { RESULTS_DIR, clearChildLogs, fakeUpstreamChannel, startOrvado, startPortkey, startUpstream, writeCatalogFile } from "./servers.ts";
import { directTarget, orvadoTarget, portkeyTarget } from "./targets.ts";
import { watchSettlement, type Settlement } from "./settlement.ts";
import { watchPeakRss } from "./processes.ts";
import { forDatabase, kafkaBrokerPid, processCpuMs, treeCpuMs, watchPostgresCpu, type PostgresCpu } from "./proc-cpu.ts";
import { jobBody, modelsOfPrices, TIER_SIDE, type MixModel } from "./mix-jobs.ts";
import { runMixLoad, type MixLoadResult, type MixTarget } from "./mix-load.ts";
import { addedP99Ms, cpuSecondsPer1000, legMedians, type LegMedians, type RoundFigures, type Timed } from "./mix-figures.ts";
import { fixed, formatTable, mib, since } from "./stats.ts";

const SECONDS = Number(process.env.BENCH_MIX_SECONDS ?? 30);
const ROUNDS = Number(process.env.BENCH_MIX_ROUNDS ?? 3);
const CONNECTIONS = Number(process.env.BENCH_MIX_CONNECTIONS ?? 48);
const TIME_FACTOR = Number(process.env.BENCH_MIX_TIME_FACTOR ?? 100);
const WARMUP_S = Number(process.env.BENCH_MIX_WARMUP_S ?? 5);
const SEED = Number(process.env.BENCH_MIX_SEED ?? 1);
// A 4096x4096 answer behind 47 others on a small machine takes long; a timeout is an unexpected outcome.
const TIMEOUT_MS = 300_000;
const DIRECT = "direct";
const started = Date.now();
const log = (message: string) => process.stderr.write(`[bench:mix ${since(started)}] ${message}\n`);

interface MixLeg {
  name: string;
  target: MixTarget;
  /** The leg's own processes (the upstream's and the gateway's): their trees' CPU and RSS. */
  pids(): number[];
  /** Orvado's: its database's PostgreSQL processes, whose CPU counts too. */
  postgres?: PostgresCpu;
  /** The local broker's CPU counts too (Orvado on Kafka). */
  onKafka: boolean;
  settlement?: Settlement;
  stop(): Promise<void>;
}

/** The models of config/prices.json, each one channel at the fake upstream, priced at the tiers it offers. */
function writeMixCatalog(upstreamUrl: string, models: MixModel[]): string {
  const channel = fakeUpstreamChannel(upstreamUrl, 100_000, { timeoutMs: TIMEOUT_MS });
  return writeCatalogFile(models.map((m) => ({ id: m.id, family: m.family, tiers: m.tiers, channels: [channel] })), "mix-models");
}

function mixModels(): MixModel[] {
  const prices = JSON.parse(readFileSync(new URL("../config/prices.json", import.meta.url), "utf8")) as { prices: Parameters<typeof modelsOfPrices>[0] };
  return modelsOfPrices(prices.prices);
}

const targetOf = ({ url, headers }: MixTarget): MixTarget => ({ url, headers });

/** One 1K url image through the leg, answered 200, before it is measured. */
async function smokeTest(leg: MixLeg, model: string) {
  const body = jobBody({ id: "smoke", kind: "image", model, tier: "1K", size: "1024x1024", format: "url", delayMs: 0 });
  const response = await fetch(leg.target.url, { method: "POST", headers: { "content-type": "application/json", ...leg.target.headers }, body });
  const text = await response.text();
  if (response.status !== 200 || !text.includes('"url"')) throw new Error(`${leg.name} answered ${response.status}: ${text.slice(0, 300)}`);
}

async function orvadoLeg(upstream: { url: string; pid: number }, catalog: string, kafka: KafkaSettings | undefined): Promise<MixLeg> {
  const orvado = await startOrvado({ modelsFile: catalog, kafka, env: { BENCH_LOG_LEVEL: "warn" } });
  const settlement = await watchSettlement(orvado.info);
  return {
    name: "Orvado",
    target: targetOf(orvadoTarget(orvado.info)),
    pids: () => [upstream.pid, orvado.info.pid],
    postgres: watchPostgresCpu(forDatabase(orvado.info.databaseUrl)),
    onKafka: kafka !== undefined,
    settlement,
    stop: async () => {
      await settlement.close();
      await orvado.stop();
    },
  };
}

async function clusterLeg(upstream: { url: string; pid: number }, catalog: string, kafka: KafkaSettings): Promise<MixLeg> {
  const cluster = await startOrvadoCluster({ modelsFile: catalog, accounts: 1, kafka });
  const settlement = await watchSettlement(cluster.info);
  return {
    name: "Orvado cluster",
    target: targetOf(orvadoTarget(cluster.info)),
    pids: () => [upstream.pid, ...cluster.pids()],
    postgres: watchPostgresCpu(forDatabase(cluster.info.databaseUrl)),
    onKafka: true,
    settlement,
    stop: async () => {
      await settlement.close();
      await cluster.stop();
    },
  };
}

/** The upstream's own time per job since the last call (fake-upstream.ts GET /bench/timings). */
async function takeTimings(upstreamUrl: string): Promise<Record<string, number>> {
  const response = await fetch(`${upstreamUrl}/bench/timings`);
  return ((await response.json()) as { timings: Record<string, number> }).timings;
}

function legCpuMs(leg: MixLeg, pids: number[], brokerPid: number | null): number {
  const own = pids.reduce((sum, pid) => sum + treeCpuMs(pid), 0);
  return own + (leg.postgres?.totalMs() ?? 0) + (leg.onKafka && brokerPid !== null ? processCpuMs(brokerPid) : 0);
}

function outcomesOf(load: MixLoadResult): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const { outcome } of load.results) counts[outcome] = (counts[outcome] ?? 0) + 1;
  return counts;
}

/** The 200 image answers with the upstream's own time for their job. */
function timedAnswers(load: MixLoadResult, timings: Record<string, number>): Timed[] {
  return load.results.filter((r) => r.job.kind === "image" && r.post.status === 200 && timings[r.job.id] !== undefined).map((r) => ({ clientMs: r.post.ms, upstreamMs: timings[r.job.id]! }));
}

interface RoundRun {
  leg: MixLeg;
  round: number;
  seconds: number;
  seed: number;
  idPrefix: string;
}

async function measureRound(run: RoundRun, models: MixModel[], upstreamUrl: string, brokerPid: number | null): Promise<RoundFigures> {
  const { leg } = run;
  await takeTimings(upstreamUrl);
  const pids = leg.pids();
  const rss = watchPeakRss(pids, 250);
  const sampler = setInterval(() => leg.postgres?.sample(), 1000);
  const cpuBefore = legCpuMs(leg, pids, brokerPid);
  const load = await runMixLoad({ target: leg.target, models, seed: run.seed, timeFactor: TIME_FACTOR, connections: CONNECTIONS, durationS: run.seconds, timeoutMs: TIMEOUT_MS, idPrefix: run.idPrefix });
  // Billing's work for this round is the round's cost, not the next leg's.
  await leg.settlement?.untilSettled();
  const cpuMs = legCpuMs(leg, pids, brokerPid) - cpuBefore;
  clearInterval(sampler);
  const peakRssBytes = rss.stop();
  const outcomes = outcomesOf(load);
  const delivered = outcomes.delivered ?? 0;
  const figures = { leg: leg.name, round: run.round, wallS: load.wallS, delivered, imagesPerS: delivered / load.wallS, cpuMs, cpuSecondsPer1000: cpuSecondsPer1000(cpuMs, delivered), peakRssBytes, addedP99Ms: addedP99Ms(timedAnswers(load, await takeTimings(upstreamUrl))), outcomes };
  log(`round ${run.round} ${leg.name}: ${fixed(figures.imagesPerS, 1)} images/s, ${fixed(figures.cpuSecondsPer1000, 1)} CPU-s per 1,000, peak RSS ${mib(peakRssBytes)}, added p99 ${fixed(figures.addedP99Ms, 1)} ms; ${JSON.stringify(outcomes)}`);
  return figures;
}

/** Every leg once per round, in a rotating order, so drift on a shared machine hits all alike; the same jobs for every leg of a round. */
async function measureAll(legs: MixLeg[], models: MixModel[], upstreamUrl: string, brokerPid: number | null): Promise<RoundFigures[]> {
  const rounds: RoundFigures[] = [];
  for (let round = 1; round <= ROUNDS; round += 1) {
    for (let index = 0; index < legs.length; index += 1) {
      const leg = legs[(index + round - 1) % legs.length]!;
      rounds.push(await measureRound({ leg, round, seconds: SECONDS, seed: SEED + round, idPrefix: `r${round}l${index}` }, models, upstreamUrl, brokerPid));
    }
  }
  return rounds;
}

async function warmUp(legs: MixLeg[], models: MixModel[]) {
  log(`warming up ${legs.map((leg) => leg.name).join(", ")} for ${WARMUP_S} s each`);
  for (const leg of legs) {
    await runMixLoad({ target: leg.target, models, seed: SEED, timeFactor: TIME_FACTOR, connections: CONNECTIONS, durationS: WARMUP_S, timeoutMs: TIMEOUT_MS, idPrefix: "warm" });
    await leg.settlement?.untilSettled();
  }
}

function report(medians: LegMedians[], rounds: RoundFigures[], notes: string[]): string {
  const rows: (string | number)[][] = [["leg", "images/s", "of direct", "CPU-s per 1,000 images", "peak RSS", "added p99 ms", "delivered", "refused", "failed", "unexpected"]];
  for (const m of medians) {
    const mine = rounds.filter((r) => r.leg === m.leg);
    const count = (pick: (outcome: string) => boolean) => mine.reduce((sum, r) => sum + Object.entries(r.outcomes).filter(([o]) => pick(o)).reduce((s, [, n]) => s + n, 0), 0);
    rows.push([m.leg, fixed(m.imagesPerS, 1), fixed(m.ofDirect), fixed(m.cpuSecondsPer1000, 1), mib(m.peakRssBytes), fixed(m.addedP99Ms, 1), count((o) => o === "delivered"), count((o) => o === "refused"), count((o) => o === "failed"), count((o) => o.startsWith("unexpected"))]);
  }
  return [formatTable(rows), `(medians of ${ROUNDS} round(s) per leg; delivered/refused/failed/unexpected summed over them)`, ...notes].join("\n");
}

/** Kafka if a broker answers, and whether its JVM runs here (its CPU is then counted). */
async function kafkaFor(notes: string[]): Promise<{ settings?: KafkaSettings; brokerPid: number | null }> {
  const kafka = await benchKafka();
  if ("skipped" in kafka) {
    notes.push(`Kafka: ${kafka.skipped}; Orvado runs on the Postgres log`);
    return { brokerPid: null };
  }
  const brokerPid = kafkaBrokerPid();
  notes.push(`Kafka: ${describeKafka(kafka.settings)}; ${brokerPid === null ? "no broker JVM on this machine, its CPU not counted" : `the broker's JVM (pid ${brokerPid}) counted, with whatever else uses it meanwhile`}`);
  return { settings: kafka.settings, brokerPid };
}

async function startClusterLeg(upstream: { url: string; pid: number }, catalog: string, kafka: KafkaSettings | undefined, notes: string[]): Promise<MixLeg | null> {
  const missing = kafka ? clusterMissing() : "no Kafka broker";
  if (missing) {
    log(`Orvado cluster leg skipped: ${missing}`);
    notes.push(`Orvado cluster: skipped, ${missing}`);
    return null;
  }
  return clusterLeg(upstream, catalog, kafka!);
}

/** Renders the upstream's photo PNG of every size once, before anything is timed. */
async function renderPhotos(upstreamUrl: string) {
  for (const side of Object.values(TIER_SIDE)) await (await fetch(`${upstreamUrl}/files/${side}x${side}.png`)).arrayBuffer();
}

async function main() {
  const loadAverageAtStart = loadavg();
  clearChildLogs();
  const notes = ["PostgreSQL: the Orvado leg's database's backends and the server's own processes (shared with anything else on that server)"];
  const models = mixModels();
  const upstream = await startUpstream(0, "photo");
  const legs: MixLeg[] = [];
  try {
    await renderPhotos(upstream.info.url);
    const portkey = await startPortkey();
    const upstreamPids = { url: upstream.info.url, pid: upstream.info.pid };
    legs.push({ name: DIRECT, target: targetOf(directTarget(upstream.info.url)), pids: () => [upstream.info.pid], onKafka: false, stop: async () => {} });
    legs.push({ name: "Portkey", target: targetOf(portkeyTarget(portkey.info.url, upstream.info.url)), pids: () => [upstream.info.pid, portkey.process.pid!], onKafka: false, stop: () => portkey.stop() });
    const kafka = await kafkaFor(notes);
    const catalog = writeMixCatalog(upstream.info.url, models);
    legs.push(await orvadoLeg(upstreamPids, catalog, kafka.settings));
    const cluster = await startClusterLeg(upstreamPids, catalog, kafka.settings, notes);
    if (cluster) legs.push(cluster);
    for (const leg of legs) await smokeTest(leg, models[0]!.id);
    await warmUp(legs, models);
    const rounds = await measureAll(legs, models, upstream.info.url, kafka.brokerPid);
    const medians = legMedians(rounds, DIRECT);
    const loadAverageAtEnd = loadavg();
    process.stdout.write(`\n${report(medians, rounds, notes)}\nload average (1 min) at start ${fixed(loadAverageAtStart[0]!)}, at end ${fixed(loadAverageAtEnd[0]!)} on ${cpus().length} CPUs\n\n`);
    const file = join(RESULTS_DIR, `mix-${new Date().toISOString().replace(/[:.]/g, "-")}.json`);
    const machine = { cpus: cpus().length, cpuModel: cpus()[0]?.model, memoryBytes: totalmem(), node: process.version, kernel: release(), loadAverageAtStart, loadAverageAtEnd };
    const settings = { seconds: SECONDS, rounds: ROUNDS, connections: CONNECTIONS, timeFactor: TIME_FACTOR, warmupS: WARMUP_S, seed: SEED, models };
    writeFileSync(file, JSON.stringify({ when: new Date().toISOString(), machine, settings, notes, medians, rounds }, null, 2));
    log(`wrote ${file}`);
  } finally {
    for (const leg of legs.reverse()) await leg.stop();
    await upstream.stop();
  }
}

await main();
