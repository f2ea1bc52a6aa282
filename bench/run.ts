// `npm run bench`: Orvado against a peer gateway (Portkey) and against the upstream
// itself, all in front of the same instant fake upstream. Alternates the
// targets round by round at 1 and at 100 connections, prints one table and the
// Orvado ÷ Portkey ratios, writes the JSON to bench/results/, and (unless
// BENCH_PROFILE=0) profiles the Orvado process and lists its hot spots.
//
// Environment: BENCH_DURATION_S (per round, default 10), BENCH_ROUNDS (default 3),
// BENCH_CONNECTIONS (default "1,100"), BENCH_PROFILE (default 1), BENCH_ORVADO (default 1;
// 0 leaves both Orvado legs out),
// BENCH_SPREAD_ACCOUNTS (default 64: the "Orvado, N accounts" targets; 0 or 1 leaves them out),
// BENCH_TARGETS (comma list of target names, e.g. "Portkey,Orvado,Orvado, 64 accounts,Orvado on Kafka";
// default all; the ratios need direct, Portkey and the leg's own target; a leg none of whose
// targets is listed is not started),
// BENCH_WARMUP_S (default 10: every target under 10 connections at once before measuring),
// BENCH_IMAGE ("solid" (default): a few-kB PNG, as the targets are defined; "photo": a
// PNG as large as a photo's, about 3.3 MB at 1024x1024),
// KAFKA_BROKERS (adds the "Orvado on Kafka" leg: the same Orvado with its events on Kafka,
// under a topic prefix of the run's own; and the "Orvado cluster" leg, which also needs
// haproxy; without them a leg is skipped and the reason printed), KAFKA_TOPIC_PARTITIONS,
// KAFKA_TOPIC_REPLICATION (bench/kafka.ts).
//
// "Orvado" is one funded account and key, as a single customer running requests in
// parallel; "Orvado, N accounts" rotates the same load over N accounts and keys.
// "Orvado on Kafka" (and its N-accounts target) is the same process and load with the
// event stream on Kafka instead of the Postgres log; billing's ledger stays in PostgreSQL.
// "Orvado cluster" (and its N-accounts target) is npm run start:cluster's topology: two
// processes of each service, HAProxy in front of the two edges, on PostgreSQL and Kafka
// (bench/orvado-cluster.ts); the load goes to the balancer.
// The profile is taken in a separate pass after the measurements (profiling slows
// the process), with the N-accounts load at the highest connection count, on the Postgres log.
import { cpus, loadavg, totalmem, release } from "node:os";
import { mkdirSync, readdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { KafkaSettings } from "@orvado/events";
import { runLoad, type LoadResult, type Target } from "./load.ts";
import type { Charges } from "./ledger-check.ts";
import { benchKafka, describeKafka } from "./kafka.ts";
import { summarizeProfile, type ProfileSummary } from "./profile-summary.ts";
import { clusterMissing, startOrvadoCluster, type RunningOrvado } from "./orvado-cluster.ts";
import { RESULTS_DIR, clearChildLogs, startPortkey, startUpstream, writeBenchCatalog } from "./servers.ts";
import { watchSettlement, type Settlement } from "./settlement.ts";
import {
  ORVADO,
  ORVADO_CLUSTER,
  ORVADO_ON_KAFKA,
  directTarget,
  measure,
  orvadoTarget,
  orvadoTargets,
  portkeyTarget,
  smokeTest,
  spreadTargetName,
  tryStartOrvado,
  type Comparison,
} from "./targets.ts";
import { fixed, formatTable, since } from "./stats.ts";

const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 10);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CONNECTIONS = (process.env.BENCH_CONNECTIONS ?? "1,100").split(",").map(Number);
const PROFILE = process.env.BENCH_PROFILE !== "0";
const WITH_ORVADO = process.env.BENCH_ORVADO !== "0";
const SPREAD_ACCOUNTS = Number(process.env.BENCH_SPREAD_ACCOUNTS ?? 64);
// A comma followed by a space is part of a name ("Orvado, 64 accounts"), not a separator.
const ONLY_TARGETS = process.env.BENCH_TARGETS?.split(/,(?! )/);
// Long enough for V8 to optimise the hot paths: with a few seconds, Orvado's first
// c=1 round ran slower than its third.
const WARMUP_S = Number(process.env.BENCH_WARMUP_S ?? 10);
const started = Date.now();

const log = (message: string) => process.stderr.write(`[bench ${since(started)}] ${message}\n`);
const selected = (name: string) => !ONLY_TARGETS || ONLY_TARGETS.includes(name);

/** One Orvado under test (a process, or the cluster's processes), with its targets and its settlement watch. */
interface OrvadoLeg {
  name: string;
  orvado: RunningOrvado;
  targets: Target[];
  settlement: Settlement;
}

interface Ratios {
  addedLatencyP50: number | null;
  addedLatencyMean: number | null;
  throughputC100: number | null;
  /** The same throughput ratio for the load spread over many accounts. */
  throughputC100Spread: number | null;
}

function ratios(comparisons: Comparison[], leg: string): Ratios {
  const spread = spreadTargetName(leg, SPREAD_ACCOUNTS);
  const pick = (connections: number, name: string) => comparisons.find((c) => c.connections === connections)?.results.find((r) => r.target === name);
  const [direct1, portkey1, orvado1] = ["direct", "Portkey", leg].map((name) => pick(1, name));
  const [portkey100, orvado100, spread100] = ["Portkey", leg, spread].map((name) => pick(100, name));
  const added = (value: (r: LoadResult) => number) =>
    direct1 && portkey1 && orvado1 ? (value(orvado1) - value(direct1)) / (value(portkey1) - value(direct1)) : null;
  return {
    addedLatencyP50: added((r) => r.p50Ms),
    addedLatencyMean: added((r) => r.meanMs),
    throughputC100: portkey100 && orvado100 ? orvado100.rps / portkey100.rps : null,
    throughputC100Spread: portkey100 && spread100 ? spread100.rps / portkey100.rps : null,
  };
}

/** What one leg measured, beside its name: ratios, billing's totals and the 200s it answered. */
interface LegOutcome {
  leg: string;
  ratios: Ratios;
  charges: Charges;
  answered200: number;
  targets: string[];
}

const verdict = (value: number | null, ok: (v: number) => boolean) => (value === null ? "n/a" : `${fixed(value)} (${ok(value) ? "meets" : "misses"} target)`);

function ratioLines({ leg, ratios: ratio }: LegOutcome): string[] {
  const label = (text: string) => `${text}: `.padEnd(66);
  return [
    `${label(`${leg} ÷ Portkey, c=1 added latency over direct (p50)`)}${verdict(ratio.addedLatencyP50, (v) => v <= 1)}   target ≤ 1.0`,
    `${label(`${leg} ÷ Portkey, c=1 added latency over direct (mean)`)}${verdict(ratio.addedLatencyMean, (v) => v <= 1)}`,
    `${label(`${leg} ÷ Portkey, c=100 throughput`)}${verdict(ratio.throughputC100, (v) => v >= 1.5)}   target ≥ 1.5`,
    `${label(`${leg} (many accounts) ÷ Portkey, c=100 throughput`)}${verdict(ratio.throughputC100Spread, (v) => v >= 1.5)}`,
  ];
}

function settlementLines(comparisons: Comparison[], outcome: LegOutcome): string[] {
  const lines: string[] = [];
  for (const { connections, backlogs: all } of comparisons) {
    const backlogs = all.filter((backlog) => outcome.targets.includes(backlog.target));
    if (backlogs.length === 0) continue;
    const most = backlogs.reduce((a, b) => (b.pendingAtEnd > a.pendingAtEnd ? b : a));
    const longest = Math.max(...backlogs.map((b) => b.drainedMs));
    lines.push(`${outcome.leg} settlement at c=${connections}: at most ${most.pendingAtEnd} holds unsettled when a round ended, all settled within ${fixed(longest / 1000, 1)} s (the next round waits for it)`);
  }
  const { charges } = outcome;
  lines.push(
    `${outcome.leg} ledger: ${charges.charged} charged, ${charges.notCharged} not charged, ${charges.pending} pending; ${outcome.answered200} answers 200 counted ` +
      "(incl. smoke and warm-up; requests still in flight when a timed run stops finish and are charged too, docs/api.md#how-long-a-call-takes)",
  );
  return lines;
}

function report(comparisons: Comparison[], outcomes: LegOutcome[], notes: string[]): string {
  const rows: (string | number)[][] = [["connections", "target", "req/s", "mean ms", "p50 ms", "p99 ms", "errors", "requests"]];
  for (const { connections, results } of comparisons) {
    for (const r of results) rows.push([connections, r.target, fixed(r.rps, 0), fixed(r.meanMs), fixed(r.p50Ms), fixed(r.p99Ms), r.errors, r.requests]);
  }
  const lines = [formatTable(rows)];
  for (const outcome of outcomes) lines.push("", ...ratioLines(outcome));
  lines.push("");
  for (const outcome of outcomes) lines.push(...settlementLines(comparisons, outcome));
  lines.push(...notes);
  return lines.join("\n");
}

/**
 * A separate pass with a fresh Orvado under --cpu-prof, so the measurements above
 * are not slowed by the profiler. The raw profile is kept as
 * bench/results/orvado-latest.cpuprofile (git-ignored) for Chrome DevTools.
 */
async function profilePass(upstreamUrl: string): Promise<ProfileSummary | null> {
  const profileDir = join(RESULTS_DIR, `profile-${Date.now()}`);
  mkdirSync(profileDir, { recursive: true });
  try {
    const orvado = await tryStartOrvado(upstreamUrl, SPREAD_ACCOUNTS, log, { profileDir });
    if (!orvado) return null;
    const connections = Math.max(...CONNECTIONS);
    const targets = orvadoTargets(orvado.info);
    const result = await runLoad(targets[targets.length - 1]!, connections, DURATION_S);
    log(`profiled ${result.target} at c=${connections}: ${fixed(result.rps, 0)} req/s under the profiler`);
    await orvado.stop();
    if (orvado.info.dataDir) rmSync(orvado.info.dataDir, { recursive: true, force: true });
    const file = readdirSync(profileDir).find((name) => name.endsWith(".cpuprofile"));
    if (!file) return null;
    renameSync(join(profileDir, file), join(RESULTS_DIR, "orvado-latest.cpuprofile"));
    return summarizeProfile(join(RESULTS_DIR, "orvado-latest.cpuprofile"));
  } finally {
    rmSync(profileDir, { recursive: true, force: true });
  }
}

function formatHotSpots(summary: ProfileSummary): string {
  const rows: (string | number)[][] = [["self %", "package"], ...summary.packages.slice(0, 10).map((s) => [`${fixed(s.share * 100, 1)}%`, s.name])];
  const fnRows: (string | number)[][] = [["self %", "function", "where"], ...summary.functions.map((s) => [`${fixed(s.share * 100, 1)}%`, s.name, s.where])];
  return [`Orvado CPU profile: ${fixed(summary.totalMs / 1000, 1)} s sampled, ${fixed(summary.idleShare * 100, 1)}% idle`, formatTable(rows), "", formatTable(fnRows)].join("\n");
}

/** A leg is started only if one of its targets is to be measured. */
function legWanted(leg: string): boolean {
  return WITH_ORVADO && [leg, ...(SPREAD_ACCOUNTS > 1 ? [spreadTargetName(leg, SPREAD_ACCOUNTS)] : [])].some(selected);
}

async function legOf(orvado: RunningOrvado): Promise<OrvadoLeg> {
  const settlement = await watchSettlement(orvado.info);
  const targets = orvadoTargets(orvado.info);
  return { name: targets[0]!.name, orvado, targets, settlement };
}

async function startLeg(upstreamUrl: string, kafka?: KafkaSettings): Promise<OrvadoLeg | null> {
  const child = await tryStartOrvado(upstreamUrl, SPREAD_ACCOUNTS, log, { kafka });
  return child ? legOf(child) : null;
}

/** The Kafka leg, or null and why not (printed under the table as well). */
async function startKafkaLeg(upstreamUrl: string): Promise<{ leg: OrvadoLeg | null; note: string }> {
  if (!legWanted(ORVADO_ON_KAFKA)) return { leg: null, note: `${ORVADO_ON_KAFKA}: not selected (BENCH_ORVADO, BENCH_TARGETS)` };
  const kafka = await benchKafka();
  if ("skipped" in kafka) {
    log(`${ORVADO_ON_KAFKA} leg skipped: ${kafka.skipped}`);
    return { leg: null, note: `${ORVADO_ON_KAFKA}: skipped, ${kafka.skipped}` };
  }
  const leg = await startLeg(upstreamUrl, kafka.settings);
  return { leg, note: leg ? `${ORVADO_ON_KAFKA}: ${describeKafka(kafka.settings)}` : `${ORVADO_ON_KAFKA}: skipped, it did not start (bench/results/orvado-kafka.log)` };
}

/** start:cluster's topology, or null and why not: it needs Kafka and HAProxy (printed under the table as well). */
async function startClusterLeg(upstreamUrl: string): Promise<{ leg: OrvadoLeg | null; note: string }> {
  if (!legWanted(ORVADO_CLUSTER)) return { leg: null, note: `${ORVADO_CLUSTER}: not selected (BENCH_ORVADO, BENCH_TARGETS)` };
  const skip = (reason: string) => {
    log(`${ORVADO_CLUSTER} leg skipped: ${reason}`);
    return { leg: null, note: `${ORVADO_CLUSTER}: skipped, ${reason}` };
  };
  const kafka = await benchKafka();
  if ("skipped" in kafka) return skip(kafka.skipped);
  const noBalancer = clusterMissing();
  if (noBalancer) return skip(noBalancer);
  try {
    const orvado = await startOrvadoCluster({ modelsFile: writeBenchCatalog(upstreamUrl, 100_000), accounts: SPREAD_ACCOUNTS, kafka: kafka.settings });
    try {
      await smokeTest(orvadoTarget(orvado.info));
    } catch (error) {
      await orvado.stop();
      throw error;
    }
    const note = `${ORVADO_CLUSTER}: 2 processes each of auth, billing, generation and edge (bundles), HAProxy in front of the edges; ${describeKafka(kafka.settings)}`;
    return { leg: await legOf(orvado), note };
  } catch (error) {
    return skip(`it did not start (${(error as Error).message.split("\n")[0]}; bench/results/orvado-cluster.log)`);
  }
}

async function stopLeg(leg: OrvadoLeg) {
  await leg.settlement.close();
  await leg.orvado.stop();
}

async function main() {
  const loadAverageAtStart = loadavg();
  clearChildLogs();
  const upstream = await startUpstream();
  const portkey = await startPortkey();
  const legs: OrvadoLeg[] = [];
  const stopped = new Set<OrvadoLeg>();
  try {
    const postgresLeg = legWanted(ORVADO) ? await startLeg(upstream.info.url) : null;
    if (postgresLeg) legs.push(postgresLeg);
    const kafka = await startKafkaLeg(upstream.info.url);
    if (kafka.leg) legs.push(kafka.leg);
    const cluster = await startClusterLeg(upstream.info.url);
    if (cluster.leg) legs.push(cluster.leg);
    const targets = [directTarget(upstream.info.url), portkeyTarget(portkey.info.url, upstream.info.url), ...legs.flatMap((leg) => leg.targets)].filter((target) => selected(target.name));
    for (const target of targets) await smokeTest(target);
    log(`warming up ${targets.map((t) => t.name).join(", ")}`);
    const warmups = await Promise.all(targets.map((target) => runLoad(target, 10, WARMUP_S)));
    for (const leg of legs) await leg.settlement.untilSettled();
    const settlements = new Map(legs.flatMap((leg) => leg.targets.map((target) => [target.name, leg.settlement] as const)));
    const comparisons: Comparison[] = [];
    for (const connections of CONNECTIONS) comparisons.push(await measure(targets, connections, { rounds: ROUNDS, durationS: DURATION_S, log, settlements }));
    const outcomes: LegOutcome[] = [];
    for (const leg of legs) {
      const names = leg.targets.map((target) => target.name);
      const ok200 = (results: LoadResult[]) => results.filter((r) => names.includes(r.target)).reduce((sum, r) => sum + (r.statusCodes["200"] ?? 0), 0);
      const smoked = 1 + targets.filter((target) => names.includes(target.name)).length;
      const answered200 = smoked + ok200(warmups) + comparisons.reduce((sum, c) => sum + ok200(c.results), 0);
      outcomes.push({ leg: leg.name, ratios: ratios(comparisons, leg.name), charges: await leg.settlement.charges(), answered200, targets: names });
      await stopLeg(leg);
      stopped.add(leg);
    }
    const profile = PROFILE && postgresLeg ? await profilePass(upstream.info.url) : null;
    const text = report(comparisons, outcomes, [kafka.note, cluster.note]);
    process.stdout.write(`\n${text}\nload average (1 min) at start ${fixed(loadAverageAtStart[0]!)}, at end ${fixed(loadavg()[0]!)} on ${cpus().length} CPUs\n\n${profile ? formatHotSpots(profile) + "\n" : ""}`);
    const file = join(RESULTS_DIR, `bench-${new Date().toISOString().replace(/[:.]/g, "-")}.json`);
    // The load average says how much else ran on the machine meanwhile (a shared machine skews every figure).
    const machine = { cpus: cpus().length, cpuModel: cpus()[0]?.model, memoryBytes: totalmem(), node: process.version, kernel: release(), loadAverageAtStart, loadAverageAtEnd: loadavg() };
    const settings = { durationS: DURATION_S, rounds: ROUNDS, connections: CONNECTIONS, spreadAccounts: SPREAD_ACCOUNTS, orvadoMeasured: postgresLeg !== null, image: process.env.BENCH_IMAGE ?? "solid" };
    const ledgerJson = (outcome: LegOutcome | undefined) => outcome && { ...outcome.charges, capturedMicros: String(outcome.charges.capturedMicros), answered200: outcome.answered200 };
    const postgresOutcome = outcomes.find((outcome) => outcome.leg === ORVADO);
    const kafkaOutcome = outcomes.find((outcome) => outcome.leg === ORVADO_ON_KAFKA);
    const kafkaJson = kafka.leg
      ? { settings: { ...kafka.leg.orvado.info.kafka, acks: "all", idempotentProducer: true }, ratios: kafkaOutcome!.ratios, ledger: ledgerJson(kafkaOutcome) }
      : { skipped: kafka.note };
    const clusterOutcome = outcomes.find((outcome) => outcome.leg === ORVADO_CLUSTER);
    const clusterJson = cluster.leg
      ? { topology: cluster.note, kafka: cluster.leg.orvado.info.kafka, ratios: clusterOutcome!.ratios, ledger: ledgerJson(clusterOutcome) }
      : { skipped: cluster.note };
    const json = {
      when: new Date().toISOString(),
      machine,
      settings,
      comparisons,
      ratios: postgresOutcome?.ratios ?? null,
      orvadoLedger: ledgerJson(postgresOutcome) ?? null,
      kafka: kafkaJson,
      cluster: clusterJson,
      profile,
    };
    writeFileSync(file, JSON.stringify(json, null, 2));
    log(`wrote ${file}`);
  } finally {
    for (const leg of legs) if (!stopped.has(leg)) await stopLeg(leg);
    await portkey.stop();
    await upstream.stop();
  }
}

await main();
