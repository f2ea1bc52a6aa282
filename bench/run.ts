// `npm run bench`: Orvado against a peer gateway (Portkey) and against the upstream
// itself, all three in front of the same instant fake upstream. Alternates the
// targets round by round at 1 and at 100 connections, prints one table and the
// Orvado ÷ Portkey ratios, writes the JSON to bench/results/, and (unless
// BENCH_PROFILE=0) profiles the Orvado process and lists its hot spots.
//
// Environment: BENCH_DURATION_S (per round, default 10), BENCH_ROUNDS (default 3),
// BENCH_CONNECTIONS (default "1,100"), BENCH_PROFILE (default 1), BENCH_ORVADO (default 1),
// BENCH_SPREAD_ACCOUNTS (default 64: the "Orvado, N accounts" leg; 0 or 1 leaves it out),
// BENCH_TARGETS (comma list of target names, e.g. "Portkey,Orvado,Orvado, 64 accounts"; default all;
// the ratios need direct, Portkey, Orvado),
// BENCH_WARMUP_S (default 10: every target under 10 connections at once before measuring),
// BENCH_IMAGE ("solid" (default): a few-kB PNG, as the targets are defined; "photo": a
// PNG as large as a photo's, about 3.3 MB at 1024x1024).
//
// "Orvado" is one funded account and key, as a single customer running requests in
// parallel; "Orvado, N accounts" rotates the same load over N accounts and keys.
// The profile is taken in a separate pass after the measurements (profiling slows
// the process), with the N-accounts load at the highest connection count.
import { cpus, loadavg, totalmem, release } from "node:os";
import { mkdirSync, readdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { runLoad, type LoadResult } from "./load.ts";
import { settledCharges, waitUntilSettled, type Charges } from "./ledger-check.ts";
import { summarizeProfile, type ProfileSummary } from "./profile-summary.ts";
import { RESULTS_DIR, clearChildLogs, startPortkey, startUpstream } from "./servers.ts";
import { directTarget, measure, orvadoTargets, portkeyTarget, smokeTest, tryStartOrvado, type Comparison } from "./targets.ts";
import { fixed, formatTable, since } from "./stats.ts";

const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 10);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CONNECTIONS = (process.env.BENCH_CONNECTIONS ?? "1,100").split(",").map(Number);
const PROFILE = process.env.BENCH_PROFILE !== "0";
const WITH_ORVADO = process.env.BENCH_ORVADO !== "0";
const SPREAD_ACCOUNTS = Number(process.env.BENCH_SPREAD_ACCOUNTS ?? 64);
// Long enough for V8 to optimise the hot paths: with 3 s, Orvado's first c=1 round
// ran about a quarter slower than its third.
const WARMUP_S = Number(process.env.BENCH_WARMUP_S ?? 10);
const started = Date.now();

const log = (message: string) => process.stderr.write(`[bench ${since(started)}] ${message}\n`);

interface Ratios {
  addedLatencyP50: number | null;
  addedLatencyMean: number | null;
  throughputC100: number | null;
  /** The same throughput ratio for the load spread over many accounts. */
  throughputC100Spread: number | null;
}

function ratios(comparisons: Comparison[]): Ratios {
  const pick = (connections: number, name: string) =>
    comparisons.find((c) => c.connections === connections)?.results.find((r) => (name === "spread" ? r.target.startsWith("Orvado, ") : r.target === name));
  const [direct1, portkey1, orvado1] = ["direct", "Portkey", "Orvado"].map((name) => pick(1, name));
  const [portkey100, orvado100, spread100] = ["Portkey", "Orvado", "spread"].map((name) => pick(100, name));
  const added = (value: (r: LoadResult) => number) =>
    direct1 && portkey1 && orvado1 ? (value(orvado1) - value(direct1)) / (value(portkey1) - value(direct1)) : null;
  return {
    addedLatencyP50: added((r) => r.p50Ms),
    addedLatencyMean: added((r) => r.meanMs),
    throughputC100: portkey100 && orvado100 ? orvado100.rps / portkey100.rps : null,
    throughputC100Spread: portkey100 && spread100 ? spread100.rps / portkey100.rps : null,
  };
}

function report(comparisons: Comparison[], ratio: Ratios, charges: Charges | null, orvadoOk: number): string {
  const rows: (string | number)[][] = [["connections", "target", "req/s", "mean ms", "p50 ms", "p99 ms", "errors", "requests"]];
  for (const { connections, results } of comparisons) {
    for (const r of results) rows.push([connections, r.target, fixed(r.rps, 0), fixed(r.meanMs), fixed(r.p50Ms), fixed(r.p99Ms), r.errors, r.requests]);
  }
  const verdict = (value: number | null, ok: (v: number) => boolean) => (value === null ? "n/a" : `${fixed(value)} (${ok(value) ? "meets" : "misses"} target)`);
  const lines = [
    formatTable(rows),
    "",
    `Orvado ÷ Portkey, c=1 added latency over direct (p50):  ${verdict(ratio.addedLatencyP50, (v) => v <= 1)}   target ≤ 1.0`,
    `Orvado ÷ Portkey, c=1 added latency over direct (mean): ${verdict(ratio.addedLatencyMean, (v) => v <= 1)}`,
    `Orvado ÷ Portkey, c=100 throughput:                      ${verdict(ratio.throughputC100, (v) => v >= 1.5)}   target ≥ 1.5`,
    `Orvado (many accounts) ÷ Portkey, c=100 throughput:      ${verdict(ratio.throughputC100Spread, (v) => v >= 1.5)}`,
  ];
  for (const { connections, backlogs } of comparisons) {
    if (backlogs.length === 0) continue;
    const most = backlogs.reduce((a, b) => (b.pendingAtEnd > a.pendingAtEnd ? b : a));
    const longest = Math.max(...backlogs.map((b) => b.drainedMs));
    lines.push(`Orvado settlement at c=${connections}: at most ${most.pendingAtEnd} holds unsettled when a round ended, all settled within ${fixed(longest / 1000, 1)} s (the next round waits for it)`);
  }
  if (charges) {
    lines.push(
      `Orvado ledger: ${charges.charged} charged, ${charges.notCharged} not charged, ${charges.pending} pending; ${orvadoOk} answers 200 counted ` +
        "(incl. smoke and warm-up; requests still in flight when a timed run stops finish and are charged too, spec 3)",
    );
  }
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
    const orvado = await tryStartOrvado(upstreamUrl, SPREAD_ACCOUNTS, log, profileDir);
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

async function main() {
  const loadAverageAtStart = loadavg();
  clearChildLogs();
  const upstream = await startUpstream();
  const portkey = await startPortkey();
  const orvado = WITH_ORVADO ? await tryStartOrvado(upstream.info.url, SPREAD_ACCOUNTS, log) : null;
  const children = [orvado, portkey, upstream].filter((child) => child !== null);
  try {
    const targets = [directTarget(upstream.info.url), portkeyTarget(portkey.info.url, upstream.info.url)];
    if (orvado) targets.push(...orvadoTargets(orvado.info));
    // A comma followed by a space is part of a name ("Orvado, 64 accounts"), not a separator.
    const only = process.env.BENCH_TARGETS?.split(/,(?! )/);
    if (only) targets.splice(0, targets.length, ...targets.filter((target) => only.includes(target.name)));
    for (const target of targets) await smokeTest(target);
    log(`warming up ${targets.map((t) => t.name).join(", ")}`);
    const warmups = await Promise.all(targets.map((target) => runLoad(target, 10, WARMUP_S)));
    if (orvado) await waitUntilSettled(orvado.info.databaseUrl);
    const comparisons: Comparison[] = [];
    for (const connections of CONNECTIONS) comparisons.push(await measure(targets, connections, { rounds: ROUNDS, durationS: DURATION_S, log, orvadoDatabaseUrl: orvado?.info.databaseUrl }));
    const ratio = ratios(comparisons);
    const ok200 = (results: LoadResult[]) => results.filter((r) => r.target.startsWith("Orvado")).reduce((sum, r) => sum + (r.statusCodes["200"] ?? 0), 0);
    const orvadoOk = orvado ? targets.filter((t) => t.name.startsWith("Orvado")).length + ok200(warmups) + comparisons.reduce((sum, c) => sum + ok200(c.results), 0) : 0;
    const charges = orvado ? await settledCharges(orvado.info.databaseUrl) : null;
    await orvado?.stop();
    const profile = PROFILE && WITH_ORVADO ? await profilePass(upstream.info.url) : null;
    const text = report(comparisons, ratio, charges, orvadoOk);
    process.stdout.write(`\n${text}\nload average (1 min) at start ${fixed(loadAverageAtStart[0]!)}, at end ${fixed(loadavg()[0]!)} on ${cpus().length} CPUs\n\n${profile ? formatHotSpots(profile) + "\n" : ""}`);
    const file = join(RESULTS_DIR, `bench-${new Date().toISOString().replace(/[:.]/g, "-")}.json`);
    // The load average says how much else ran on the machine meanwhile (a shared machine skews every figure).
    const machine = { cpus: cpus().length, cpuModel: cpus()[0]?.model, memoryBytes: totalmem(), node: process.version, kernel: release(), loadAverageAtStart, loadAverageAtEnd: loadavg() };
    const settings = { durationS: DURATION_S, rounds: ROUNDS, connections: CONNECTIONS, spreadAccounts: SPREAD_ACCOUNTS, orvadoMeasured: orvado !== null, image: process.env.BENCH_IMAGE ?? "solid" };
    const json = { when: new Date().toISOString(), machine, settings, comparisons, ratios: ratio, orvadoLedger: charges && { ...charges, capturedMicros: String(charges.capturedMicros), answered200: orvadoOk }, profile };
    writeFileSync(file, JSON.stringify(json, null, 2));
    log(`wrote ${file}`);
  } finally {
    for (const child of children) await child.stop();
  }
}

await main();
