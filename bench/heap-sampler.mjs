// `BENCH_SERVICE_NODE_OPTIONS="--import $PWD/bench/heap-sampler.mjs" npm run bench:soak`: each
// service samples its allocations from start (V8's sampling heap profiler, through the inspector's
// public protocol) and, on every SIGUSR2, collects garbage and writes the allocations still alive to
// $SAMPLER_DIR/<service>-<n>.heapprofile (default the system's temp folder), each with the stack
// that made it. `node --import tsx bench/live-memory.ts <held> <idle> <jobs>` compares two of them.
import { writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

// One sample per this many bytes allocated, on average: small enough that a 200-byte object held
// per job is still seen thousands of times over a few thousand held jobs.
const SAMPLING_INTERVAL_BYTES = 256;
const service = (process.argv[1] ?? "").split("/").slice(-3, -2)[0] || "process";
const session = new Session();
session.connect();
await session.post("HeapProfiler.startSampling", { samplingInterval: SAMPLING_INTERVAL_BYTES });
let written = 0;
process.on("SIGUSR2", async () => {
  // What is still alive, not what awaits collection.
  await session.post("HeapProfiler.collectGarbage");
  const { profile } = await session.post("HeapProfiler.getSamplingProfile");
  written += 1;
  writeFileSync(join(process.env.SAMPLER_DIR ?? tmpdir(), `${service}-${written}.heapprofile`), JSON.stringify(profile));
});
