// `BENCH_SERVICE_NODE_OPTIONS="--import $PWD/bench/service-sampler.mjs" npm run bench:soak`: each
// service process appends one JSON line a second to $SAMPLER_DIR/samples-<service>.jsonl (default
// the system's temp folder): seconds since start, RSS, heap in use, ArrayBuffers (answers and images
// read but not yet let go) in MiB, upstream requests sent and answers read so far, garbage collections and their total
// milliseconds (gcMs; of which young-generation scavenges, scavengeMs, and full mark-compacts, markCompactMs), and the longest event-loop delay of the second. docs/performance.md reads a soak with it.
import { appendFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { subscribe } from "node:diagnostics_channel";
import { constants, monitorEventLoopDelay, PerformanceObserver } from "node:perf_hooks";

const service = (process.argv[1] ?? "").split("/").slice(-3, -2)[0] || "process";
const file = join(process.env.SAMPLER_DIR ?? tmpdir(), `samples-${service}.jsonl`);
const started = Date.now();
const mib = (bytes) => Math.round(bytes / 1048576);
let requests = 0;
let answers = 0;
let gcs = 0;
let gcMs = 0;
let scavengeMs = 0;
let markCompactMs = 0;
subscribe("http.client.request.start", () => (requests += 1));
subscribe("http.client.response.finish", () => (answers += 1));
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    gcs += 1;
    gcMs += entry.duration;
    if (entry.detail?.kind === constants.NODE_PERFORMANCE_GC_MINOR) scavengeMs += entry.duration;
    if (entry.detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) markCompactMs += entry.duration;
  }
}).observe({ entryTypes: ["gc"] });
const delay = monitorEventLoopDelay({ resolution: 20 });
delay.enable();
setInterval(() => {
  const memory = process.memoryUsage();
  const line = { s: Math.round((Date.now() - started) / 1000), rss: mib(memory.rss), heapUsed: mib(memory.heapUsed), arrayBuffers: mib(memory.arrayBuffers), requests, answers, gcs, gcMs: Math.round(gcMs), scavengeMs: Math.round(scavengeMs), markCompactMs: Math.round(markCompactMs), loopDelayMaxMs: Math.round(delay.max / 1e6) };
  appendFileSync(file, `${JSON.stringify(line)}\n`);
  delay.reset();
}, 1000).unref();
