// The Node/V8 flags of Orvado's processes.
//
// The one-process stack: `npm start` (package.json) and the
// benchmark's Orvado (bench/servers.ts), which measures what `npm start` runs.
//
// --max-semi-space-size=32: the young generation's two semi-spaces may grow to
// 32 MB each, twice this Node's default. With a hundred requests in flight most
// young objects are still alive at a scavenge, and each scavenge copies them;
// fewer, larger scavenges copy less: more requests a second at 100 connections for
// a little more peak RSS. 64 served no more, made more full collections at one
// connection and raised its p99 (docs/design-choices.md#node-flags).
//
// --initial-old-space-size=128: the old generation may reach 128 MB before V8
// collects it in full, however little of it is alive. At one connection Orvado's
// old generation is small, and V8 set its limit just above it plus the new space.
// With so little room above the live objects it started marking again soon after
// each full collection: a mark-compact several times a second, no scavenge between
// them, each a stretch of the main thread and more of the helper threads
// (--trace-gc, --trace-incremental-marking). V8 keeps this size as the floor of the
// limit it sets after each collection (--trace-gc-verbose). With it the full
// collections at one connection stop, throughput rises at both loads and the p50 at
// one connection is unchanged (docs/design-choices.md#node-flags).
export const STACK_NODE_FLAGS: readonly string[] = ["--max-semi-space-size=32", "--initial-old-space-size=128"];

/**
 * Each service's flags in the four-process deployment (deploy/Dockerfile reads them
 * from services/<name>/dist/node-flags, written by npm run build; the process stack
 * passes them too). That deployment is the one that holds thousands of requests open
 * for 10-70 s each, so its flags trade CPU for memory per held request:
 * --max-semi-space-size=4: a young generation of 8 MB instead of 32 (held objects are
 *   long-lived: they are promoted after a copy or two whatever its size);
 * --heap-growing-percent=15: the old generation may grow 15% past what survived the
 *   last full collection before the next one, where V8's own factor let generation's
 *   heap grow well past its live objects while thousands of jobs were held.
 * Not --optimize-for-size: it holds the young generation at 2 MB whatever
 * --max-semi-space-size says. Generation then collected several times as often for
 * the same held requests, and collecting took a large share of its CPU while it
 * admitted a burst, for a soak peak that moved less than the machine did
 * (docs/design-choices.md#node-flags).
 */
const HEAP_GROWTH_FLAG = "--heap-growing-percent=15";
const HELD_REQUEST_FLAGS: readonly string[] = ["--max-semi-space-size=4", HEAP_GROWTH_FLAG];

/**
 * Generation's young generation is 32 MB (16-MB semi-spaces): it is the process that
 * reads the upstreams' answers as they come back, each many short-lived strings, and
 * with 8 MB it scavenged every few dozen answers, copying the live objects of the jobs
 * being finished each time. In the soak, against the 8-MB young generation, it spent
 * less time collecting, answered sooner and peaked lower. A 64-MB young generation
 * collected no less and peaked no lower; the edge's at 32 MB cost it memory and
 * lowered nothing (docs/design-choices.md#node-flags).
 */
const ANSWER_READER_FLAGS: readonly string[] = ["--max-semi-space-size=16", HEAP_GROWTH_FLAG];

export const SERVICE_NODE_FLAGS: Readonly<Record<"auth" | "billing" | "generation" | "edge", readonly string[]>> = {
  auth: HELD_REQUEST_FLAGS,
  billing: HELD_REQUEST_FLAGS,
  generation: ANSWER_READER_FLAGS,
  edge: HELD_REQUEST_FLAGS,
};
