// Child processes for the benchmarks: each server under test (the fake upstream,
// Portkey, Orvado) runs in its own process so the load generator never shares
// an event loop with what it measures.
import { spawn, type ChildProcess } from "node:child_process";
import { createWriteStream, readFileSync, readdirSync } from "node:fs";
import { createInterface } from "node:readline";

/** Children that are ready print one line: this marker, then a JSON object. */
export const READY_MARKER = "BENCH_READY ";

export interface Child<Info> {
  name: string;
  process: ChildProcess;
  info: Info;
  /** SIGTERM, then wait for the exit (SIGKILL after graceMs). */
  stop(graceMs?: number): Promise<void>;
}

export interface ChildOptions {
  name: string;
  args: string[];
  env?: NodeJS.ProcessEnv;
  /** Where the child's stdout and stderr go besides the ready line (default: discarded). */
  logFile?: string;
  readyTimeoutMs?: number;
  /** Reads the ready line (default: READY_MARKER then JSON); null for any other line. */
  readyLine?: (line: string) => unknown;
}

const markedLine = (line: string) => (line.startsWith(READY_MARKER) ? JSON.parse(line.slice(READY_MARKER.length)) : null);

/** SIGTERM, then wait for the exit (SIGKILL after graceMs); at once if the child has already exited. */
export function stopper(child: ChildProcess) {
  return async (graceMs = 30_000) => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
    await exited;
    clearTimeout(timer);
  };
}

function pipeOutput(child: ChildProcess, logFile: string | undefined) {
  const sink = logFile ? createWriteStream(logFile, { flags: "a" }) : null;
  child.stderr?.on("data", (chunk: Buffer) => sink?.write(chunk));
  return sink;
}

/**
 * Runs `round` with a tracer attached beside it (`strace -p`, `perf record -t`): the
 * tracer gets half a second to attach first, and is stopped with SIGINT, on which
 * both write their output, before this resolves with the round's result.
 */
export async function roundUnderTracer<T>(command: string, args: string[], round: () => Promise<T>): Promise<T> {
  const tracer = spawn(command, args, { stdio: "ignore" });
  await new Promise((resolve) => setTimeout(resolve, 500));
  const result = await round();
  const exited = new Promise((resolve) => tracer.once("exit", resolve));
  tracer.kill("SIGINT");
  await exited;
  return result;
}

/** Starts `node <args>` and resolves with what the child's ready line says (by default the JSON after READY_MARKER). */
export function startReportingChild<Info>(options: ChildOptions): Promise<Child<Info>> {
  const child = spawn(process.execPath, options.args, { env: { ...process.env, ...options.env }, stdio: ["ignore", "pipe", "pipe"] });
  const sink = pipeOutput(child, options.logFile);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${options.name} was not ready in time`)), options.readyTimeoutMs ?? 120_000);
    child.once("exit", (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`${options.name} exited before it was ready (code ${code}, signal ${signal}); see ${options.logFile ?? "its output"}`));
    });
    const lines = createInterface({ input: child.stdout! });
    let ready = false;
    lines.on("line", (line) => {
      const info = ready ? null : (options.readyLine ?? markedLine)(line);
      if (info === null) {
        sink?.write(line + "\n");
        return;
      }
      ready = true;
      clearTimeout(timer);
      resolve({ name: options.name, process: child, info: info as Info, stop: stopper(child) });
    });
  });
}

/** Starts `node <args>` and resolves once GET probeUrl answers at all (any status). */
export async function startListeningChild(options: ChildOptions & { probeUrl: string }): Promise<Child<{ url: string }>> {
  const child = spawn(process.execPath, options.args, { env: { ...process.env, ...options.env }, stdio: ["ignore", "pipe", "pipe"] });
  const sink = pipeOutput(child, options.logFile);
  child.stdout?.on("data", (chunk: Buffer) => sink?.write(chunk));
  const deadline = Date.now() + (options.readyTimeoutMs ?? 60_000);
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${options.name} exited early (code ${child.exitCode}); see ${options.logFile ?? "its output"}`);
    try {
      await fetch(options.probeUrl, { signal: AbortSignal.timeout(1000) });
      return { name: options.name, process: child, info: { url: new URL(options.probeUrl).origin }, stop: stopper(child) };
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  child.kill("SIGKILL");
  throw new Error(`${options.name} did not answer ${options.probeUrl} in time`);
}

/** The children of every process, by parent pid (Linux /proc). */
function childrenByParent(): Map<number, number[]> {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const parent = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      children.set(parent, [...(children.get(parent) ?? []), Number(entry)]);
    } catch {
      // The process ended while we looked.
    }
  }
  return children;
}

/** A process and all its living descendants. */
export function descendantsOf(rootPid: number): number[] {
  const children = childrenByParent();
  const found: number[] = [];
  const pending = [rootPid];
  while (pending.length > 0) {
    const pid = pending.pop()!;
    found.push(pid);
    pending.push(...(children.get(pid) ?? []));
  }
  return found;
}

/** The children of a process whose command (the stat's "(comm)") is this name, e.g. the haproxy a cluster started. */
export function childrenNamed(parentPid: number, comm: string): number[] {
  return (childrenByParent().get(parentPid) ?? []).filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/stat`, "utf8").includes(`(${comm})`);
    } catch {
      return false;
    }
  });
}

/** Resident set size of a process and all its descendants, in bytes (Linux /proc). */
export function treeRssBytes(rootPid: number): number {
  return descendantsOf(rootPid).reduce((total, pid) => total + rssOf(pid), 0);
}

function rssOf(pid: number): number {
  try {
    return statusBytes(readFileSync(`/proc/${pid}/status`, "utf8"), "VmRSS");
  } catch {
    return 0;
  }
}

/** A size field of a /proc/<pid>/status text (VmRSS, RssAnon, RssFile, …) in bytes; 0 if absent. */
export function statusBytes(status: string, field: string): number {
  const match = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status);
  return match ? Number(match[1]) * 1024 : 0;
}

/**
 * Samples measure(pid) of each of these processes every intervalMs and remembers
 * the peak of their sum, and each one's own peak.
 */
export function watchPeaks(pids: number[], measure: (pid: number) => number, intervalMs: number) {
  const peaks = new Map<number, number>();
  const sample = () =>
    pids.reduce((sum, pid) => {
      const value = measure(pid);
      peaks.set(pid, Math.max(peaks.get(pid) ?? 0, value));
      return sum + value;
    }, 0);
  let current = sample();
  let peak = current;
  const timer = setInterval(() => {
    current = sample();
    peak = Math.max(peak, current);
  }, intervalMs);
  return {
    peak: () => peak,
    /** The sum at the last sample. */
    current: () => current,
    /** The peak of each process on its own (their peaks need not coincide). */
    peakByPid: () => new Map(peaks),
    stop() {
      clearInterval(timer);
      peak = Math.max(peak, sample());
      return peak;
    },
  };
}

/** Samples the summed RSS of these process trees every intervalMs and remembers the peak (also each tree's own). */
export function watchPeakRss(rootPids: number[], intervalMs = 250) {
  return watchPeaks(rootPids, treeRssBytes, intervalMs);
}

/**
 * Proportional set size of a process (Linux /proc smaps_rollup): its resident pages, each page
 * it shares with other processes (Node's own binary and libraries) divided among them. Summed over
 * processes it counts each page once, where summed RSS counts a shared page once per process.
 */
export function pssBytes(pid: number): number {
  try {
    return statusBytes(readFileSync(`/proc/${pid}/smaps_rollup`, "utf8"), "Pss");
  } catch {
    return 0;
  }
}

/** Samples the summed PSS of these processes (not their children), by default once a second: reading it walks each process's page tables. */
export function watchPeakPss(pids: number[], intervalMs = 1_000) {
  return watchPeaks(pids, pssBytes, intervalMs);
}

/** Open file descriptors of a process (its sockets included); 0 once it has ended. */
export function openFdCount(pid: number): number {
  try {
    return readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return 0;
  }
}

/**
 * Samples each process's count of open descriptors, by default once a second:
 * listing 17,000 of them takes a few milliseconds, too much to do as often as RSS.
 */
export function watchPeakFds(pids: number[], intervalMs = 1_000) {
  return watchPeaks(pids, openFdCount, intervalMs);
}

/**
 * A process's limit on open files: the soft one is enforced (past it, accept and
 * connect fail with EMFILE); the hard one is as far as the process may raise it
 * without privileges. NaN if the process has ended.
 */
export function openFilesLimit(pid: number | "self" = "self", which: "soft" | "hard" = "soft"): number {
  let limits: string;
  try {
    limits = readFileSync(`/proc/${pid}/limits`, "utf8");
  } catch {
    return Number.NaN;
  }
  // "Max open files            20000                20000                files"
  const line = limits.split("\n").find((l) => l.startsWith("Max open files"));
  const value = line?.split(/\s+/)[which === "soft" ? 3 : 4] ?? "1024";
  return value === "unlimited" ? Number.POSITIVE_INFINITY : Number(value);
}

const killedOnExit = new Set<ChildProcess>();
let exitHookInstalled = false;

/**
 * If this process ends without stopping a child (an exception, process.exit),
 * the child must not live on holding its sockets. One exit listener for them
 * all: a run may start more children than Node allows listeners without a warning.
 */
export function killOnExit(child: ChildProcess) {
  if (!exitHookInstalled) process.once("exit", () => killedOnExit.forEach((running) => running.kill("SIGKILL")));
  exitHookInstalled = true;
  killedOnExit.add(child);
  child.once("exit", () => killedOnExit.delete(child));
}
