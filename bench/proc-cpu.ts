// CPU time of processes from Linux's /proc, for the benchmarks that count what a
// request costs the whole machine (bench:cpu, bench:mix): one process with its
// threads, a process tree, PostgreSQL's processes and a local Kafka broker's.
import { readdirSync, readFileSync } from "node:fs";
import { descendantsOf } from "./processes.ts";

/** USER_HZ: /proc reports CPU time in ticks of 1/100 s on Linux. */
const MS_PER_TICK = 10;

/** utime + stime (ms) of a /proc/<pid>/stat or /proc/<pid>/task/<tid>/stat line; the command may hold spaces, so fields count from its ")". */
export function cpuMsOfStat(stat: string): number {
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) * MS_PER_TICK;
}

export function readProcFile(path: string): string | null {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return null; // the process or thread ended meanwhile
  }
}

/** A process's CPU over all its threads (ms); 0 once it has ended. */
export function processCpuMs(pid: number): number {
  const stat = readProcFile(`/proc/${pid}/stat`);
  return stat === null ? 0 : cpuMsOfStat(stat);
}

/** The CPU of a process and all its living descendants (ms). */
export function treeCpuMs(rootPid: number): number {
  return descendantsOf(rootPid).reduce((sum, pid) => sum + processCpuMs(pid), 0);
}

/** The main thread's CPU (its tid is the pid) and the rest of the process's threads. */
export function threadsCpuMs(pid: number): { main: number; other: number } {
  let main = 0;
  let other = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    const stat = readProcFile(`/proc/${pid}/task/${tid}/stat`);
    if (stat === null) continue;
    if (tid === String(pid)) main += cpuMsOfStat(stat);
    else other += cpuMsOfStat(stat);
  }
  return { main, other };
}

/** user + nice + system + irq + softirq of all CPUs (ms). */
export function machineCpuMs(): number {
  const ticks = readFileSync("/proc/stat", "utf8").split("\n")[0]!.trim().split(/\s+/).slice(1).map(Number);
  return (ticks[0]! + ticks[1]! + ticks[2]! + ticks[5]! + ticks[6]!) * MS_PER_TICK;
}

/** The processes whose command (the stat's "(comm)") is this name. */
function pidsNamed(comm: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (/^\d+$/.test(entry) && readProcFile(`/proc/${entry}/stat`)?.includes(`(${comm})`)) pids.push(Number(entry));
  }
  return pids;
}

/** A process's command line with its NULs as spaces (PostgreSQL writes a backend's role there); "" once it has ended. */
export function commandLine(pid: number): string {
  return (readProcFile(`/proc/${pid}/cmdline`) ?? "").replaceAll("\0", " ").trim();
}

export interface PostgresCpu {
  /** Reads every matching postgres process now; call it every second or so (see below). */
  sample(): void;
  /** The CPU of every matching postgres process seen so far, each at its last reading (ms). */
  totalMs(): number;
}

/**
 * PostgreSQL's processes (the server, its backends and helpers) that `include`
 * accepts by command line, as last seen. A backend's CPU leaves /proc with it,
 * and pools close idle connections (pg's after 10 s), so a sum of the living
 * alone drops, even below zero in a round where another gateway's idle backends
 * end. Sampled every second, each backend's last reading is kept: a pool closes a
 * backend only after seconds idle, so its last reading is its whole CPU.
 */
export function watchPostgresCpu(include: (commandLine: string) => boolean = () => true): PostgresCpu {
  const seen = new Map<number, number>();
  const sample = () => {
    for (const pid of pidsNamed("postgres")) if (seen.has(pid) || include(commandLine(pid))) seen.set(pid, Math.max(seen.get(pid) ?? 0, processCpuMs(pid)));
  };
  return {
    sample,
    totalMs() {
      sample();
      let total = 0;
      for (const ms of seen.values()) total += ms;
      return total;
    },
  };
}

/** A backend's title names its client's address ("127.0.0.1(40312)", "[local]"); the server and its helpers' titles do not. */
const BACKEND_TITLE = /\(\d+\)|\[local\]/;

/**
 * One database's share of the server: the backends connected to it and the
 * server's own processes (postmaster, WAL writer, checkpointer, …), which also
 * work for any other database on the same server.
 */
export function forDatabase(databaseUrl: string): (commandLine: string) => boolean {
  const name = new URL(databaseUrl).pathname.slice(1);
  return (line) => (BACKEND_TITLE.test(line) ? line.split(/\s+/).includes(name) : true);
}

/** The local Kafka broker's JVM (main class kafka.Kafka), or null when none runs on this machine. */
export function kafkaBrokerPid(): number | null {
  return pidsNamed("java").find((pid) => commandLine(pid).includes("kafka.Kafka")) ?? null;
}
