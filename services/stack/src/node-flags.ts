// The Node/V8 flags of the one-process stack: `npm start` (package.json) and the
// benchmark's Orvado (bench/servers.ts), which measures what `npm start` runs.
//
// --max-semi-space-size=32: the young generation's two semi-spaces may grow to
// 32 MB each (this Node's default is 16: a new space of 32 MB, measured). With a
// hundred requests in flight most young objects are still alive at a scavenge, and
// each scavenge copies them; fewer, larger scavenges copy less. Orvado alone at
// c=100, alternating: 1,721 and 1,728 req/s against 1,399 and 1,588 with the
// default, peak RSS 450–495 against 426–438 MB. 64 served as much (1,694, 1,821) but
// at one connection it kept Buffers' memory outside the heap long enough to force
// 106 full collections in a run where 32 made 29 and the default 5, and its p99
// there was 12–36 ms against 6–8 (docs/performance.md#measured-design-choices).
// The four-process deployment keeps V8's default, for the 10,000-request soak's
// 2-GiB budget (with 64 on all four it peaked at 1,845 MiB against 1,547).
export const STACK_NODE_FLAGS: readonly string[] = ["--max-semi-space-size=32"];
