// The Node/V8 flags of the one-process stack: `npm start` (package.json) and the
// benchmark's Orvado (bench/servers.ts), which measures what `npm start` runs.
//
// --max-semi-space-size=64: the young generation's semi-spaces may grow to 64 MB
// (V8's default on 64-bit is 16). With a hundred requests in flight most objects
// are still alive at a scavenge, and each scavenge copies them; fewer, larger
// scavenges copy less. Alternating c=100 runs of the stack: 1,289, 1,364, 1,608 req/s
// against 1,230, 1,222, 1,418, with 11–17% less of the process's CPU per request,
// for a peak RSS of 491 against 403 MB (docs/performance.md, seventh session).
// The four-process deployment keeps V8's default: on all four processes the flag
// took the 10,000-request soak from 1,547 to 1,845 MiB, near its 2 GiB budget.
export const STACK_NODE_FLAGS: readonly string[] = ["--max-semi-space-size=64"];
