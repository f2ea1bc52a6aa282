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

function stopper(child: ChildProcess) {
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

/** Resident set size of a process and all its descendants, in bytes (Linux /proc). */
export function treeRssBytes(rootPid: number): number {
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
  let total = 0;
  const pending = [rootPid];
  while (pending.length > 0) {
    const pid = pending.pop()!;
    total += rssOf(pid);
    pending.push(...(children.get(pid) ?? []));
  }
  return total;
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

/** Samples the summed RSS of these process trees every intervalMs and remembers the peak (also each tree's own). */
export function watchPeakRss(rootPids: number[], intervalMs = 250) {
  const peaks = new Map<number, number>();
  const sample = () =>
    rootPids.reduce((sum, pid) => {
      const rss = treeRssBytes(pid);
      peaks.set(pid, Math.max(peaks.get(pid) ?? 0, rss));
      return sum + rss;
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
    /** The peak of each tree on its own (their peaks need not coincide). */
    peakByPid: () => new Map(peaks),
    stop() {
      clearInterval(timer);
      peak = Math.max(peak, sample());
      return peak;
    },
  };
}
