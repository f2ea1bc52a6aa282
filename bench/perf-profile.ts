// `npm run bench:cpu` with BENCH_PERF=1: Linux perf samples a gateway's main thread
// with its call chains through one round, and sums its CPU per request twice: by the
// JavaScript that ran it (a package, Node's own JavaScript, the gateway's bundle),
// by garbage collection, or by the event loop outside JavaScript; and by the kind of
// code (system calls, V8's tiers, garbage collection). perf samples by a
// timer and names JIT-compiled functions from the map file that `--perf-basic-prof`
// makes Node write (/tmp/perf-<pid>.map), so small functions are not overcounted as
// under V8's CPU profiler (docs/performance.md#npm-run-benchcpu-where-the-cpu-goes-per-request).
import { spawnSync } from "node:child_process";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { roundUnderTracer } from "./processes.ts";

/** Samples a second: enough for a few thousand samples per 10-s round, little enough not to slow the gateway much. */
const SAMPLE_HZ = 1999;

/** Node's flag that makes the gateways write the map file perf names JIT code from. */
export const PERF_NODE_OPTION = "--perf-basic-prof";

export function perfAvailable(): boolean {
  return spawnSync("perf", ["--version"]).status === 0;
}

/** The map file a gateway started with PERF_NODE_OPTION leaves behind. */
export function removePerfMap(pid: number): void {
  rmSync(`/tmp/perf-${pid}.map`, { force: true });
}

const PACKAGE = /node_modules\/((?:@[^/]+\/)?[^/]+)\/(?!.*node_modules\/)/;
const GARBAGE_COLLECTION = /Scaveng|MarkCompact|Marking|Sweep|GCTracer|::Heap::/;

/** Where a JIT-compiled function comes from, by the file perf's map names for it ("JS:*name file:line:col"). */
function originOfJavaScript(symbol: string): string {
  const packageName = PACKAGE.exec(symbol)?.[1];
  if (packageName) return packageName;
  if (symbol.includes(" node:")) return "Node's JavaScript";
  return "the gateway's bundle";
}

interface Frame {
  symbol: string;
  /** perf's name for the code's file: a path, [kernel.kallsyms], or the map file for JIT code. */
  dso: string;
}

const INTERPRETER = /^Builtins_InterpreterEntryTrampoline/;

/** The code a sample's CPU is charged to, found walking its frames from the leaf. */
interface ChargedTo {
  garbageCollection: boolean;
  /** V8's interpreter entry came before the nearest named JavaScript function. */
  interpreted: boolean;
  /** The nearest JIT-compiled JavaScript function's symbol, if any. */
  javaScript?: string;
}

/**
 * Garbage collection, or the nearest JavaScript function: V8's builtins and runtime,
 * Node's C++ and the kernel count for the JavaScript that called them. An
 * interpreted function has no name of its own in perf's map: its frames show as
 * V8's interpreter entry below the compiled caller.
 */
function chargedTo(frames: Frame[]): ChargedTo {
  let interpreted = false;
  for (const frame of frames) {
    if (GARBAGE_COLLECTION.test(frame.symbol)) return { garbageCollection: true, interpreted };
    if (INTERPRETER.test(frame.symbol)) interpreted = true;
    if (frame.symbol.startsWith("JS:")) return { garbageCollection: false, interpreted, javaScript: frame.symbol };
  }
  return { garbageCollection: false, interpreted };
}

/**
 * What a sample's CPU is charged to, its frames given leaf first: the nearest
 * JavaScript function's origin, or garbage collection, or, with no JavaScript on
 * the stack, the event loop's own native work.
 */
function originOf(frames: Frame[], charged: ChargedTo): string {
  if (charged.garbageCollection) return "V8 garbage collection";
  if (charged.javaScript) return originOfJavaScript(charged.javaScript);
  return frames[0]?.dso === "[kernel.kallsyms]" ? "kernel, outside JavaScript" : "Node.js, libuv and V8, outside JavaScript";
}

const SYSTEM_CALL = /^(entry_SYSCALL|do_syscall_64)/;
/** V8's tier of a compiled function, the mark after "JS:" in perf's map (Node 20's V8). */
const TIER: Record<string, string> = { "*": "optimized JavaScript (TurboFan)", "^": "baseline JavaScript (Sparkplug)", "+": "optimized JavaScript (Maglev)" };

/**
 * The kind of code a sample ran: a system call (with everything the kernel does in
 * it, a socket write's delivery to its reader among it), the kernel otherwise
 * (interrupts, page faults, the scheduler), garbage collection, or JavaScript by the tier V8
 * had compiled its nearest function to, with the builtins and runtime it called.
 */
function kindOf(frames: Frame[], charged: ChargedTo): string {
  if (frames.some((frame) => SYSTEM_CALL.test(frame.symbol))) return "system calls";
  if (frames[0]?.dso === "[kernel.kallsyms]") return "the kernel, outside system calls";
  if (charged.garbageCollection) return "V8 garbage collection";
  if (charged.interpreted) return "interpreted JavaScript (Ignition)";
  if (charged.javaScript) return TIER[charged.javaScript[3]!] ?? "JavaScript, tier not marked";
  return "Node.js, libuv and V8, outside JavaScript";
}

const FRAME = /^\s*[0-9a-f]+ (.*) \((.*)\)$/;

/** perf script's samples (call chains, leaf first, a blank line between samples) counted by origin and by kind of code. */
function countSamples(script: string): { byOrigin: Map<string, number>; byKind: Map<string, number> } {
  const byOrigin = new Map<string, number>();
  const byKind = new Map<string, number>();
  const count = (counts: Map<string, number>, key: string) => counts.set(key, (counts.get(key) ?? 0) + 1);
  for (const sample of script.split(/\n\s*\n/)) {
    const frames = sample.split("\n").flatMap((line) => {
      const match = FRAME.exec(line);
      return match ? [{ symbol: match[1]!, dso: match[2]! }] : [];
    });
    if (frames.length === 0) continue;
    const charged = chargedTo(frames);
    count(byOrigin, originOf(frames, charged));
    count(byKind, kindOf(frames, charged));
  }
  return { byOrigin, byKind };
}

export interface MainThreadProfile {
  /** CPU in ms per request by the JavaScript that ran it, largest first. */
  byOrigin: Record<string, number>;
  /** CPU in ms per request by kind of code, largest first. */
  byKind: Record<string, number>;
}

/**
 * perf record on the gateway's main thread (its tid is its pid) while `round` runs;
 * returns its CPU in ms per request by origin and by kind of code.
 */
export async function profileMainThread(pid: number, workDir: string, round: () => Promise<{ requests: number }>): Promise<MainThreadProfile> {
  const data = join(workDir, `perf-${process.pid}-${pid}.data`);
  const { requests } = await roundUnderTracer("perf", ["record", "-q", "-g", "-e", "cpu-clock", "-F", String(SAMPLE_HZ), "-t", String(pid), "-o", data], round);
  const script = spawnSync("perf", ["script", "-i", data, "-F", "ip,sym,dso"], { encoding: "utf8", maxBuffer: 1024 * 1024 * 1024 });
  rmSync(data, { force: true });
  // perf record refused (kernel.perf_event_paranoid, say) leaves no data: say so rather than report zeros.
  if (script.status !== 0) throw new Error(`perf could not sample the gateway: ${script.stderr.trim() || script.error?.message}`);
  const { byOrigin, byKind } = countSamples(script.stdout);
  const msPerRequest = (counts: Map<string, number>) =>
    Object.fromEntries([...counts].map(([key, samples]) => [key, (samples * 1000) / SAMPLE_HZ / requests] as const).sort((a, b) => b[1] - a[1]));
  return { byOrigin: msPerRequest(byOrigin), byKind: msPerRequest(byKind) };
}
