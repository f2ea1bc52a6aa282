// Reads a V8 .cpuprofile (node --cpu-prof) and lists where the time went: self
// time per function and per package, the hot spots the bench report prints.
import { readFileSync } from "node:fs";

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}

interface ProfileNode {
  id: number;
  callFrame: CallFrame;
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

export interface HotSpot {
  name: string;
  where: string;
  selfMs: number;
  share: number;
}

export interface ProfileSummary {
  totalMs: number;
  idleShare: number;
  functions: HotSpot[];
  packages: HotSpot[];
}

/** node_modules/<pkg> or our workspace folder, so a hot spot says whose code it is. */
export function ownerOf(url: string): string {
  if (!url) return "(native / V8)";
  const modules = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (modules) return modules[1]!;
  if (url.startsWith("node:")) return "node core";
  // The benchmarks run Orvado bundled (servers.ts benchBundle): its workspace code is one file and its chunks.
  if (/\/bench\/dist\//.test(url)) return "Orvado's own code (bundled)";
  const ours = /\/(services\/[^/]+|libs\/[^/]+|tools\/[^/]+|bench)\//.exec(url);
  return ours ? ours[1]! : url.replace(/^file:\/\//, "");
}

function shortUrl(url: string, line: number): string {
  const trimmed = url.replace(/^file:\/\//, "").replace(/^.*node_modules\//, "").replace(/^.*\/(services|libs|tools|bench)\//, "$1/");
  return trimmed ? `${trimmed}:${line + 1}` : "";
}

type Totals = Map<string, { name: string; where: string; micros: number }>;

function add(totals: Totals, name: string, where: string, micros: number) {
  const key = `${name}\u0000${where}`;
  totals.set(key, { name, where, micros: (totals.get(key)?.micros ?? 0) + micros });
}

function ranked(totals: Totals, totalMicros: number, limit: number): HotSpot[] {
  return [...totals.values()]
    .sort((a, b) => b.micros - a.micros)
    .slice(0, limit)
    .map(({ name, where, micros }) => ({ name, where, selfMs: micros / 1000, share: micros / totalMicros }));
}

export function summarizeProfile(path: string, limit = 15): ProfileSummary {
  const profile = JSON.parse(readFileSync(path, "utf8")) as CpuProfile;
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const selfMicros = new Map<number, number>();
  profile.samples.forEach((id, index) => selfMicros.set(id, (selfMicros.get(id) ?? 0) + (profile.timeDeltas[index] ?? 0)));
  const functions: Totals = new Map();
  const packages: Totals = new Map();
  let total = 0;
  let idle = 0;
  for (const [id, micros] of selfMicros) {
    const frame = byId.get(id)!.callFrame;
    total += micros;
    if (frame.functionName === "(idle)") {
      idle += micros;
      continue;
    }
    add(functions, frame.functionName || "(anonymous)", shortUrl(frame.url, frame.lineNumber), micros);
    add(packages, frame.functionName === "(garbage collector)" ? "(garbage collector)" : ownerOf(frame.url), "", micros);
  }
  const busy = Math.max(1, total - idle);
  return {
    totalMs: total / 1000,
    idleShare: idle / Math.max(1, total),
    functions: ranked(functions, busy, limit),
    packages: ranked(packages, busy, limit),
  };
}

// `node --import tsx bench/profile-summary.ts <file.cpuprofile>` prints the summary.
if (import.meta.url === `file://${process.argv[1]}`) {
  const summary = summarizeProfile(process.argv[2]!, 25);
  console.log(`total ${summary.totalMs.toFixed(0)} ms, idle ${(summary.idleShare * 100).toFixed(1)}%`);
  for (const spot of summary.packages) console.log(`${(spot.share * 100).toFixed(1).padStart(5)}%  ${spot.name}`);
  console.log("");
  for (const spot of summary.functions) console.log(`${(spot.share * 100).toFixed(1).padStart(5)}%  ${spot.name}  ${spot.where}`);
}
