// `npm run bench:floor`: how much latency the durable steps on an
// image answer's path cost at one connection, against what Portkey adds in all. Beside
// direct, Portkey and Orvado it drives bench/floor-gateway.ts, a gateway that does
// nothing but node:http both ways ("floor: forward") and then only those durable steps
// ("floor: durable": a hold committed before the upstream call, the image fdatasync'd
// and the outcome committed before the answer). Alternates the targets round by round,
// prints each one's added latency over direct and its ratio to Portkey's, the floor's
// per-step medians beside the mean of each of Orvado's job steps (from its /metrics,
// orvado_generation_job_step_seconds), and writes the JSON to bench/results/floor-<time>.json.
//
// Environment: BENCH_DURATION_S (per round, default 10), BENCH_ROUNDS (default 3),
// BENCH_WARMUP_S (default 10), BENCH_ORVADO (default 1; 0 leaves Orvado out).
import { cpus, loadavg, release } from "node:os";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { runLoad, type LoadResult, type Target } from "./load.ts";
import { watchSettlement } from "./settlement.ts";
import { createBenchDatabase } from "./database.ts";
import { benchDataDir } from "./data-dir.ts";
import { RESULTS_DIR, clearChildLogs, startFloorGateway, startPortkey, startUpstream } from "./servers.ts";
import { ORVADO, directTarget, measure, orvadoTarget, portkeyTarget, smokeTest, tryStartOrvado } from "./targets.ts";
import { fixed, formatTable, since } from "./stats.ts";

const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 10);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const WARMUP_S = Number(process.env.BENCH_WARMUP_S ?? 10);
const WITH_ORVADO = process.env.BENCH_ORVADO !== "0";
const started = Date.now();
const log = (message: string) => process.stderr.write(`[bench:floor ${since(started)}] ${message}\n`);

function floorTargets(floorUrl: string, upstreamUrl: string): Target[] {
  const plain = directTarget(upstreamUrl);
  return [
    { ...plain, name: "floor: forward", url: `${floorUrl}/forward/v1/images/generations` },
    { ...plain, name: "floor: durable", url: `${floorUrl}/durable/v1/images/generations` },
  ];
}

const JOB_STEPS = ["slot_and_hold", "upstream", "store", "outcome"] as const;

/** Orvado's /metrics: each job step's histogram sum and count (generation's orvado_generation_job_step_seconds). */
async function orvadoStepTotals(edgeUrl: string): Promise<Map<string, { sum: number; count: number }>> {
  const text = await (await fetch(`${edgeUrl}/metrics`)).text();
  const read = (suffix: string, step: string) => Number(new RegExp(`^orvado_generation_job_step_seconds_${suffix}\\{step="${step}"\\} (\\S+)$`, "m").exec(text)?.[1] ?? 0);
  return new Map(JOB_STEPS.map((step) => [step, { sum: read("sum", step), count: read("count", step) }]));
}

/** Each step's mean (ms) over the jobs between two readings. */
function stepMeans(before: Map<string, { sum: number; count: number }>, after: Map<string, { sum: number; count: number }>): Record<string, number | null> {
  return Object.fromEntries(
    JOB_STEPS.map((step) => {
      const count = after.get(step)!.count - before.get(step)!.count;
      return [step, count > 0 ? ((after.get(step)!.sum - before.get(step)!.sum) / count) * 1000 : null];
    }),
  );
}

async function floorStepMedians(floorUrl: string, reset: boolean): Promise<Record<string, number | null>> {
  const response = await fetch(`${floorUrl}/stats`, { method: reset ? "POST" : "GET" });
  return ((await response.json()) as { p50Ms: Record<string, number | null> }).p50Ms;
}

interface Added {
  target: string;
  p50Ms: number;
  addedP50Ms: number;
  /** This target's added p50 ÷ Portkey's. */
  ofPortkey: number;
}

function addedLatencies(results: LoadResult[]): Added[] {
  const direct = results.find((r) => r.target === "direct")!;
  const portkeyAdded = results.find((r) => r.target === "Portkey")!.p50Ms - direct.p50Ms;
  return results
    .filter((r) => r !== direct)
    .map((r) => ({ target: r.target, p50Ms: r.p50Ms, addedP50Ms: r.p50Ms - direct.p50Ms, ofPortkey: (r.p50Ms - direct.p50Ms) / portkeyAdded }));
}

function report(results: LoadResult[], added: Added[], steps: Record<string, number | null>, orvadoSteps: Record<string, number | null> | null): string {
  const rows: (string | number)[][] = [["target", "req/s", "p50 ms", "added p50 ms", "÷ Portkey's", "p99 ms", "errors"]];
  for (const r of results) {
    const a = added.find((entry) => entry.target === r.target);
    rows.push([r.target, fixed(r.rps, 0), fixed(r.p50Ms), a ? fixed(a.addedP50Ms) : "", a ? fixed(a.ofPortkey) : "", fixed(r.p99Ms), r.errors]);
  }
  const line = (times: Record<string, number | null>) => Object.entries(times).map(([step, ms]) => `${step} ${ms === null ? "n/a" : fixed(ms)}`).join(", ");
  const stepLine = line(steps);
  const forward = added.find((a) => a.target === "floor: forward");
  const durable = added.find((a) => a.target === "floor: durable");
  return [
    formatTable(rows),
    "",
    `floor: durable, each step's median inside the gateway (ms): ${stepLine}`,
    orvadoSteps ? `Orvado, each job step's mean inside generation (ms, orvado_generation_job_step_seconds): ${line(orvadoSteps)}` : "",
    forward && durable ? `the durable steps alone add ${fixed(durable.addedP50Ms - forward.addedP50Ms)} ms at p50 (floor: durable − floor: forward)` : "",
    durable ? `a gateway doing nothing but those steps adds ${fixed(durable.ofPortkey)} × Portkey's added latency (Orvado's c=1 target: ≤ 1.0)` : "",
  ].join("\n");
}

async function main() {
  const loadAverageAtStart = loadavg();
  clearChildLogs();
  const database = await createBenchDatabase();
  const dataDir = benchDataDir("floor-");
  const upstream = await startUpstream();
  const portkey = await startPortkey();
  const floor = await startFloorGateway(upstream.info.url, database.url, dataDir);
  const orvado = WITH_ORVADO ? await tryStartOrvado(upstream.info.url, 1, log) : null;
  const settlement = orvado ? await watchSettlement(orvado.info) : null;
  try {
    const targets = [directTarget(upstream.info.url), portkeyTarget(portkey.info.url, upstream.info.url), ...floorTargets(floor.info.url, upstream.info.url)];
    if (orvado) targets.push(orvadoTarget(orvado.info));
    for (const target of targets) await smokeTest(target);
    log(`warming up ${targets.map((t) => t.name).join(", ")}`);
    await Promise.all(targets.map((target) => runLoad(target, 10, WARMUP_S)));
    await settlement?.untilSettled();
    await floorStepMedians(floor.info.url, true);
    const orvadoBefore = orvado ? await orvadoStepTotals(orvado.info.edgeUrl) : null;
    const comparison = await measure(targets, 1, { rounds: ROUNDS, durationS: DURATION_S, log, settlements: new Map(settlement ? [[ORVADO, settlement]] : []) });
    const steps = await floorStepMedians(floor.info.url, false);
    const orvadoSteps = orvado && orvadoBefore ? stepMeans(orvadoBefore, await orvadoStepTotals(orvado.info.edgeUrl)) : null;
    const added = addedLatencies(comparison.results);
    process.stdout.write(`\n${report(comparison.results, added, steps, orvadoSteps)}\nload average (1 min) at start ${fixed(loadAverageAtStart[0]!)}, at end ${fixed(loadavg()[0]!)} on ${cpus().length} CPUs\n\n`);
    const file = join(RESULTS_DIR, `floor-${new Date().toISOString().replace(/[:.]/g, "-")}.json`);
    const machine = { cpus: cpus().length, cpuModel: cpus()[0]?.model, node: process.version, kernel: release(), loadAverageAtStart, loadAverageAtEnd: loadavg() };
    writeFileSync(file, JSON.stringify({ when: new Date().toISOString(), machine, settings: { durationS: DURATION_S, rounds: ROUNDS, warmupS: WARMUP_S }, results: comparison.results, added, floorStepP50Ms: steps, orvadoStepMeanMs: orvadoSteps }, null, 2));
    log(`wrote ${file}`);
  } finally {
    await settlement?.close();
    for (const child of [orvado, floor, portkey, upstream]) await child?.stop();
    await database.drop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
