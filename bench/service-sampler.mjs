// `BENCH_SERVICE_NODE_OPTIONS="--import $PWD/bench/service-sampler.mjs" npm run bench:soak`: each
// service process appends one JSON line a second to $SAMPLER_DIR/samples-<service>.jsonl (default
// the system's temp folder): seconds since start, RSS, heap in use, ArrayBuffers (answers and images
// read but not yet let go) in MiB, upstream requests sent and answers read so far, garbage collections and their total
// milliseconds (gcMs; of which young-generation scavenges, scavengeMs, and full mark-compacts, markCompactMs), and the longest event-loop delay of the second. docs/performance.md reads a soak with it.
//
// Those lines come from the main thread's timers, which stop while its event loop stays in one
// phase (a burst of answers). So a worker thread also appends a line every 250 ms, whatever the main
// thread is doing, to $SAMPLER_DIR/ticks-<service>.jsonl: seconds since start, the process's RSS in
// MiB, the upstream requests and answers so far, generation's finished job steps so far
// (slot_and_hold, upstream, store, outcome: its job-step diagnostics channel, services/generation/src/metrics.ts),
// and the main thread's timer turns so far (a 50-ms interval: 5 a line while the loop turns freely).
import { appendFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { subscribe } from "node:diagnostics_channel";
import { constants, monitorEventLoopDelay, PerformanceObserver } from "node:perf_hooks";
import { Worker } from "node:worker_threads";

const service = (process.argv[1] ?? "").split("/").slice(-3, -2)[0] || "process";
const file = join(process.env.SAMPLER_DIR ?? tmpdir(), `samples-${service}.jsonl`);
const started = Date.now();
const mib = (bytes) => Math.round(bytes / 1048576);
let gcs = 0;
let gcMs = 0;
let scavengeMs = 0;
let markCompactMs = 0;
// What the worker reads: counters in shared memory, each bumped by the main thread as it happens.
const COUNTERS = ["requests", "answers", "slot_and_hold", "upstream", "store", "outcome", "timerTurns"];
const counters = new Int32Array(new SharedArrayBuffer(4 * COUNTERS.length));
const bump = (name) => Atomics.add(counters, COUNTERS.indexOf(name), 1);
const count = (name) => Atomics.load(counters, COUNTERS.indexOf(name));
subscribe("http.client.request.start", () => bump("requests"));
subscribe("http.client.response.finish", () => bump("answers"));
subscribe("orvado:generation:job-step", (step) => COUNTERS.includes(step) && bump(step));
setInterval(() => bump("timerTurns"), 50).unref();
new Worker(
  `const { workerData } = require("node:worker_threads");
   const { appendFileSync } = require("node:fs");
   const { counters, names, file, started } = workerData;
   setInterval(() => {
     // The whole process's resident set, as the main thread's process.memoryUsage() reports it.
     const line = { s: (Date.now() - started) / 1000, rss: Math.round(process.memoryUsage.rss() / 1048576) };
     names.forEach((name, index) => (line[name] = Atomics.load(counters, index)));
     appendFileSync(file, JSON.stringify(line) + "\\n");
   }, 250);`,
  { eval: true, workerData: { counters, names: COUNTERS, file: join(process.env.SAMPLER_DIR ?? tmpdir(), `ticks-${service}.jsonl`), started } },
).unref();
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
  const line = { s: Math.round((Date.now() - started) / 1000), rss: mib(memory.rss), heapUsed: mib(memory.heapUsed), arrayBuffers: mib(memory.arrayBuffers), requests: count("requests"), answers: count("answers"), gcs, gcMs: Math.round(gcMs), scavengeMs: Math.round(scavengeMs), markCompactMs: Math.round(markCompactMs), loopDelayMaxMs: Math.round(delay.max / 1e6) };
  appendFileSync(file, `${JSON.stringify(line)}\n`);
  delay.reset();
}, 1000).unref();
