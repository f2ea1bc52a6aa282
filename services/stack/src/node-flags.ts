// The Node/V8 flags of Orvado's processes.
//
// The one-process stack: `npm start` (package.json) and the
// benchmark's Orvado (bench/servers.ts), which measures what `npm start` runs.
//
// --max-semi-space-size=32: the young generation's two semi-spaces may grow to
// 32 MB each (this Node's default is 16: a new space of 32 MB, measured). With a
// hundred requests in flight most young objects are still alive at a scavenge, and
// each scavenge copies them; fewer, larger scavenges copy less. Orvado alone at
// c=100, alternating: 1,721 and 1,728 req/s against 1,399 and 1,588 with the
// default, peak RSS 450–495 against 426–438 MB. 64 served as much (1,694, 1,821) but
// made more full collections at one connection, and its p99 there was 12–36 ms
// against 6–8 (docs/performance.md#measured-design-choices).
//
// --initial-old-space-size=128: the old generation may reach 128 MB before V8
// collects it in full, however little of it is alive. At one connection Orvado's
// old generation holds about 28 MB, and V8 set its limit to about 1.2 times that
// plus the new space's 32 MB. With so little room above the live objects it
// started marking again about 0.35 s after each full collection: a mark-compact
// every 0.3–0.4 s (about 30 in a 10-s round, no scavenge between them), each some
// 20 ms of the main thread and more of the helper threads (--trace-gc,
// --trace-incremental-marking). V8 keeps this size as the floor of the limit it
// sets after each collection (--trace-gc-verbose). Alternating with the code
// before: 0 full collections against 29 at one connection, 236 against 221 req/s;
// at 100 connections 6 against 21, 1,197 against 1,103 req/s; p50 at one
// connection unchanged (docs/performance.md#measured-design-choices).
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
 *   heap reach 1.6 times its live objects while 10,000 jobs were held.
 * Not --optimize-for-size: it holds the young generation at 2 MB whatever
 * --max-semi-space-size says. Generation then collected 1,863 times for 4,000 held
 * requests against 499 without it, and collecting took a third of its CPU while it
 * admitted a burst. The 10,000-request soak's peak moved less than the machine did:
 * 913-982 against 1,051-1,188 MiB in three alternating pairs, then 1,125-1,334 either
 * way (docs/performance.md#the-services-node-flags).
 */
const HEAP_GROWTH_FLAG = "--heap-growing-percent=15";
const HELD_REQUEST_FLAGS: readonly string[] = ["--max-semi-space-size=4", HEAP_GROWTH_FLAG];

/**
 * Generation's young generation is 32 MB (16-MB semi-spaces): it is the process that
 * reads the upstreams' answers as they come back, tens of kB of short-lived strings
 * each, and with 8 MB it scavenged every few dozen answers, copying the live objects of
 * the jobs being finished each time. In the 10,000-request soak, alternating with the
 * 8-MB young generation: 6.3-8.4 s of collection in generation against 11.3-13.2 s,
 * p50 43-57 s against 53-63 s, and a lower peak in each of three pairs. A 64-MB young
 * generation collected no less (6.1-6.5 s) and peaked no lower; the edge's at 32 MB
 * cost it 22-44 MiB and lowered nothing (docs/performance.md#the-services-node-flags).
 */
const ANSWER_READER_FLAGS: readonly string[] = ["--max-semi-space-size=16", HEAP_GROWTH_FLAG];

export const SERVICE_NODE_FLAGS: Readonly<Record<"auth" | "billing" | "generation" | "edge", readonly string[]>> = {
  auth: HELD_REQUEST_FLAGS,
  billing: HELD_REQUEST_FLAGS,
  generation: ANSWER_READER_FLAGS,
  edge: HELD_REQUEST_FLAGS,
};
