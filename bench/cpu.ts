// `npm run bench:cpu`: where the machine's CPU goes per request, for Orvado (the
// one-process stack) and for the durable floor (bench/floor-gateway.ts), alternating
// round by round in front of one fake upstream. Per request: the gateway's main
// thread and its other threads (the thread pool, V8's helpers), PostgreSQL's
// processes (every backend and helper of the server), the fake upstream, this
// process (the load generator) and the whole machine, all from /proc. With
// BENCH_STRACE=1 (Debian's strace) one more round per target counts the gateway's
// system calls per request (`strace -c -f`, which slows the gateway: its latency in
// that round is not a figure). With BENCH_PERF=1 (Debian's linux-perf) one more round
// per target samples the gateway's main thread with perf and splits its CPU per
// request by the JavaScript that ran it and by kind of code (perf-profile.ts; the gateways then run with
// --perf-basic-prof). Prints a table and writes bench/results/cpu-<time>.json.
//
// Environment: BENCH_CONNECTIONS (default 1), BENCH_ROUNDS (default 3),
// BENCH_DURATION_S (per round, default 10), BENCH_WARMUP_S (default 5), BENCH_STRACE, BENCH_PERF,
// BENCH_SPREAD_ACCOUNTS (default 1: more adds Orvado's target spread over that many
// funded accounts and keys, served by the same process, as npm run bench's).
import { spawnSync } from "node:child_process";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, release } from "node:os";
import { join } from "node:path";
import { runLoad, type Target } from "./load.ts";
import { RESULTS_DIR, clearChildLogs, startFloorGateway, startUpstream } from "./servers.ts";
import { directTarget, orvadoTargets, tryStartOrvado } from "./targets.ts";
import { createBenchDatabase } from "./database.ts";
import { benchDataDir } from "./data-dir.ts";
import { fixed, formatTable, median, since } from "./stats.ts";
import { machineCpuMs, processCpuMs, threadsCpuMs, watchPostgresCpu } from "./proc-cpu.ts";
import { roundUnderTracer } from "./processes.ts";
import { PERF_NODE_OPTION, perfAvailable, profileMainThread, removePerfMap } from "./perf-profile.ts";

const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 1);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 10);
const WARMUP_S = Number(process.env.BENCH_WARMUP_S ?? 5);
const STRACE = process.env.BENCH_STRACE === "1";
const PERF = process.env.BENCH_PERF === "1";
const SPREAD_ACCOUNTS = Number(process.env.BENCH_SPREAD_ACCOUNTS ?? 1);
const started = Date.now();
const log = (message: string) => process.stderr.write(`[bench:cpu ${since(started)}] ${message}\n`);
const postgres = watchPostgresCpu();

interface Reading {
  main: number;
  other: number;
  postgres: number;
  upstream: number;
  loadGenerator: number;
  machine: number;
}

function read(gatewayPid: number, upstreamPid: number): Reading {
  const own = process.cpuUsage();
  return {
    ...threadsCpuMs(gatewayPid),
    postgres: postgres.totalMs(),
    upstream: processCpuMs(upstreamPid),
    loadGenerator: (own.user + own.system) / 1000,
    machine: machineCpuMs(),
  };
}

interface Gateway {
  target: Target;
  pid: number;
}

interface Round {
  target: string;
  round: number;
  requests: number;
  p50Ms: number;
  /** CPU ms per request, by where it was spent. */
  perRequest: Reading;
}

async function measureRound(gateway: Gateway, upstreamPid: number, round: number): Promise<Round> {
  const before = read(gateway.pid, upstreamPid);
  const result = await runLoad(gateway.target, CONNECTIONS, DURATION_S);
  const after = read(gateway.pid, upstreamPid);
  const perRequest = Object.fromEntries(Object.keys(before).map((key) => [key, (after[key as keyof Reading] - before[key as keyof Reading]) / result.requests])) as unknown as Reading;
  log(`round ${round} ${gateway.target.name}: ${result.requests} requests, p50 ${fixed(result.p50Ms)} ms, gateway main thread ${fixed(perRequest.main, 3)} ms a request`);
  return { target: gateway.target.name, round, requests: result.requests, p50Ms: result.p50Ms, perRequest };
}

/** `strace -c -f` attached to the gateway for one round: calls of each system call per request. */
async function countSystemCalls(gateway: Gateway): Promise<Record<string, number>> {
  const output = join(RESULTS_DIR, `strace-${process.pid}.txt`);
  const result = await roundUnderTracer("strace", ["-c", "-f", "-o", output, "-p", String(gateway.pid)], () => runLoad(gateway.target, CONNECTIONS, DURATION_S));
  const calls: Record<string, number> = {};
  for (const line of readFileSync(output, "utf8").split("\n")) {
    const fields = line.trim().split(/\s+/);
    // "% time  seconds  usecs/call  calls  [errors]  syscall"
    if (fields.length >= 5 && /^\d+$/.test(fields[3]!) && /^[a-z_0-9]+$/.test(fields.at(-1)!) && fields.at(-1) !== "total") {
      calls[fields.at(-1)!] = Number(fields[3]) / result.requests;
    }
  }
  rmSync(output, { force: true });
  return calls;
}


/** One of the perf round's splits of each gateway's main thread (by origin, by kind of code), as a table with the parts Orvado spends most on first. */
function splitTable(title: string, byGateway: Map<string, Record<string, number>>): string {
  const names = [...byGateway.keys()];
  const last = byGateway.get(names.at(-1)!) ?? {};
  const parts = [...new Set([...byGateway.values()].flatMap((ms) => Object.keys(ms)))].sort((a, b) => (last[b] ?? 0) - (last[a] ?? 0));
  const rows: (string | number)[][] = [[title, ...names.map((name) => `${name} ms/req`)]];
  for (const part of parts) rows.push([part, ...names.map((name) => fixed(byGateway.get(name)?.[part] ?? 0, 3))]);
  rows.push(["in all", ...names.map((name) => fixed(Object.values(byGateway.get(name) ?? {}).reduce((sum, ms) => sum + ms, 0), 3))]);
  return formatTable(rows);
}

function report(rounds: Round[], systemCalls: Map<string, Record<string, number>>): string {
  const names = [...new Set(rounds.map((round) => round.target))];
  const keys: (keyof Reading)[] = ["main", "other", "postgres", "upstream", "loadGenerator", "machine"];
  const rows: (string | number)[][] = [["target", "p50 ms", ...keys.map((key) => `${key} ms/req`)]];
  for (const name of names) {
    const mine = rounds.filter((round) => round.target === name);
    rows.push([name, fixed(median(mine.map((round) => round.p50Ms))), ...keys.map((key) => fixed(median(mine.map((round) => round.perRequest[key])), 3))]);
  }
  const lines = [formatTable(rows), "(medians of the rounds; main and other are the gateway's threads)"];
  if (systemCalls.size > 0) {
    const calls = [...new Set([...systemCalls.values()].flatMap((counts) => Object.keys(counts)))]
      .filter((call) => [...systemCalls.values()].some((counts) => (counts[call] ?? 0) >= 0.05))
      .sort();
    const table: (string | number)[][] = [["system call", ...names.map((name) => `${name} /req`)]];
    for (const call of calls) table.push([call, ...names.map((name) => fixed(systemCalls.get(name)?.[call] ?? 0, 2))]);
    lines.push("", formatTable(table));
  }
  return lines.join("\n");
}

async function main() {
  if (STRACE && spawnSync("strace", ["-V"]).error) throw new Error("BENCH_STRACE=1 needs strace (Debian's package strace)");
  if (PERF && !perfAvailable()) throw new Error("BENCH_PERF=1 needs perf (Debian's package linux-perf)");
  clearChildLogs();
  setInterval(postgres.sample, 1000).unref();
  const loadAverageAtStart = loadavg();
  const database = await createBenchDatabase();
  const dataDir = benchDataDir("cpu-floor-");
  const upstream = await startUpstream();
  const nodeFlags = PERF ? [PERF_NODE_OPTION] : [];
  const floor = await startFloorGateway(upstream.info.url, database.url, dataDir, nodeFlags);
  const orvado = await tryStartOrvado(upstream.info.url, SPREAD_ACCOUNTS, log, { nodeFlags });
  try {
    if (!orvado) throw new Error("Orvado did not start");
    const gateways: Gateway[] = [
      { target: { ...directTarget(upstream.info.url), name: "floor: durable", url: `${floor.info.url}/durable/v1/images/generations` }, pid: floor.info.pid },
      ...orvadoTargets(orvado.info).map((target) => ({ target, pid: orvado.info.pid })),
    ];
    log(`warming up at ${CONNECTIONS} connection(s)`);
    for (const gateway of gateways) await runLoad(gateway.target, CONNECTIONS, WARMUP_S);
    const rounds: Round[] = [];
    for (let round = 1; round <= ROUNDS; round++) for (const gateway of gateways) rounds.push(await measureRound(gateway, upstream.info.pid, round));
    const systemCalls = new Map<string, Record<string, number>>();
    if (STRACE) for (const gateway of gateways) systemCalls.set(gateway.target.name, await countSystemCalls(gateway));
    const byOrigin = new Map<string, Record<string, number>>();
    const byKind = new Map<string, Record<string, number>>();
    if (PERF) {
      for (const gateway of gateways) {
        const profile = await profileMainThread(gateway.pid, RESULTS_DIR, () => runLoad(gateway.target, CONNECTIONS, DURATION_S));
        byOrigin.set(gateway.target.name, profile.byOrigin);
        byKind.set(gateway.target.name, profile.byKind);
      }
    }
    const profileTables = byOrigin.size > 0 ? `\n${splitTable("main thread, by origin", byOrigin)}\n\n${splitTable("main thread, by kind of code", byKind)}\n(one more round per target under perf record; its latency is not a figure)\n` : "";
    process.stdout.write(`\n${report(rounds, systemCalls)}\n${profileTables}load average (1 min) at start ${fixed(loadAverageAtStart[0]!)}, at end ${fixed(loadavg()[0]!)} on ${cpus().length} CPUs\n\n`);
    const file = join(RESULTS_DIR, `cpu-${new Date().toISOString().replace(/[:.]/g, "-")}.json`);
    const machine = { cpus: cpus().length, cpuModel: cpus()[0]?.model, node: process.version, kernel: release(), loadAverageAtStart, loadAverageAtEnd: loadavg() };
    writeFileSync(file, JSON.stringify({ when: new Date().toISOString(), machine, settings: { connections: CONNECTIONS, rounds: ROUNDS, durationS: DURATION_S, warmupS: WARMUP_S, spreadAccounts: SPREAD_ACCOUNTS }, rounds, systemCallsPerRequest: Object.fromEntries(systemCalls), mainThreadMsPerRequestByOrigin: Object.fromEntries(byOrigin), mainThreadMsPerRequestByKind: Object.fromEntries(byKind) }, null, 2));
    log(`wrote ${file}`);
  } finally {
    for (const child of [orvado, floor, upstream]) await child?.stop();
    for (const child of [orvado, floor]) if (PERF && child) removePerfMap(child.info.pid);
    await database.drop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
