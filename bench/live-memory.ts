// Reads two sampling heap profiles of one process (bench/heap-sampler.mjs), one taken while jobs
// are held and one before they came, and says what each held job keeps alive, by whose code
// allocated it: the innermost frame outside Node's own library names the package (or our
// service), so a socket opened by our upstream call counts as ours, not Node's.
import { readFileSync } from "node:fs";
import { ownerOf } from "./profile-summary.ts";

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}

interface SamplingNode {
  callFrame: CallFrame;
  selfSize: number;
  children: SamplingNode[];
}

type Totals = Map<string, number>;

const isNodeCore = (frame: CallFrame) => frame.url.startsWith("node:") || frame.url === "";

function allocator(stack: CallFrame[]): { owner: string; frame: string } {
  const frame = stack.findLast((candidate) => !isNodeCore(candidate)) ?? stack.at(-1)!;
  const owner = isNodeCore(frame) ? "node core (no caller of ours)" : ownerOf(frame.url);
  return { owner, frame: `${frame.functionName || "(anonymous)"} ${frame.url.replace(/^.*\/(node_modules|services|libs)\//, "$1/")}:${frame.lineNumber + 1}` };
}

/** Live sampled bytes by owner and by allocating frame. */
export function liveBytes(path: string): { byOwner: Totals; byFrame: Totals; total: number } {
  const head = (JSON.parse(readFileSync(path, "utf8")) as { head: SamplingNode }).head;
  const byOwner: Totals = new Map();
  const byFrame: Totals = new Map();
  let total = 0;
  const visit = (node: SamplingNode, stack: CallFrame[]) => {
    const here = [...stack, node.callFrame];
    if (node.selfSize > 0) {
      const { owner, frame } = allocator(here);
      byOwner.set(owner, (byOwner.get(owner) ?? 0) + node.selfSize);
      byFrame.set(frame, (byFrame.get(frame) ?? 0) + node.selfSize);
      total += node.selfSize;
    }
    for (const child of node.children) visit(child, here);
  };
  visit(head, []);
  return { byOwner, byFrame, total };
}

/** Per held job: what the held profile has beyond the idle one, largest first. */
export function perJob(held: Totals, idle: Totals, jobs: number): [string, number][] {
  return [...held]
    .map(([key, bytes]): [string, number] => [key, (bytes - (idle.get(key) ?? 0)) / jobs])
    .filter(([, bytes]) => bytes >= 1)
    .sort((a, b) => b[1] - a[1]);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [heldPath, idlePath, jobsText] = process.argv.slice(2);
  const jobs = Number(jobsText);
  if (!heldPath || !idlePath || !(jobs > 0)) throw new Error("usage: live-memory.ts <held.heapprofile> <idle.heapprofile> <jobs held>");
  const held = liveBytes(heldPath);
  const idle = liveBytes(idlePath);
  console.log(`held per job: ${((held.total - idle.total) / jobs / 1024).toFixed(1)} KiB of sampled live heap\n`);
  for (const [owner, bytes] of perJob(held.byOwner, idle.byOwner, jobs).slice(0, 15)) console.log(`${(bytes / 1024).toFixed(1).padStart(6)} KiB  ${owner}`);
  console.log("");
  for (const [frame, bytes] of perJob(held.byFrame, idle.byFrame, jobs).slice(0, 25)) console.log(`${bytes.toFixed(0).padStart(6)} B  ${frame}`);
}
