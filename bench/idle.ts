// `npm run bench:idle`: what each service of the process stack (the four bundles as production runs
// them) holds in memory with nothing to do: started on a fresh database, two accounts made, then 8 s
// idle. Prints each service's RSS (anonymous and file-backed: Node's own binary is a large part of
// the latter in every process) and the mappings that hold the most, and the sum.
import { readFileSync } from "node:fs";
import { startUpstream, writeBenchCatalog } from "./servers.ts";
import { startSplitOrvado } from "./orvado-split.ts";
import { formatTable } from "./stats.ts";
import { statusBytes } from "./processes.ts";

const IDLE_MS = 8_000;

const statusMiB = (status: string, field: string) => statusBytes(status, field) / 1024 / 1024;

/** RSS by mapping (file name, or [anon] / [heap]), largest first. */
function largestMappings(pid: number, count: number): string {
  const byName = new Map<string, number>();
  let current = "[anon]";
  for (const line of readFileSync(`/proc/${pid}/smaps`, "utf8").split("\n")) {
    const mapping = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (mapping) current = mapping[1] || "[anon]";
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (rss) byName.set(current, (byName.get(current) ?? 0) + Number(rss[1]));
  }
  return [...byName]
    .sort((a, b) => b[1] - a[1])
    .slice(0, count)
    .map(([name, kb]) => `${name.split("/").pop()} ${(kb / 1024).toFixed(1)}`)
    .join(", ");
}

const upstream = await startUpstream();
const orvado = await startSplitOrvado({ modelsFile: writeBenchCatalog(upstream.info.url, 100), accounts: 2 });
try {
  await new Promise((resolve) => setTimeout(resolve, IDLE_MS));
  const rows: (string | number)[][] = [["service", "RSS MiB", "anon MiB", "file MiB", "largest mappings (MiB)"]];
  let total = 0;
  orvado.processes.forEach(({ name, pid }) => {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const rss = statusMiB(status, "VmRSS");
    total += rss;
    rows.push([name, rss.toFixed(1), statusMiB(status, "RssAnon").toFixed(1), statusMiB(status, "RssFile").toFixed(1), largestMappings(pid, 4)]);
  });
  rows.push(["all four", total.toFixed(1), "", "", ""]);
  process.stdout.write(`${formatTable(rows)}\n`);
} finally {
  await orvado.stop();
  await upstream.stop();
}
