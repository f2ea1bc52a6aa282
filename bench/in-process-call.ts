// `npm run bench:rpc`: the CPU cost of one unary call between services: in one
// process (libs/rpc direct-transport.ts), and over loopback HTTP/2 (Orvado's
// Connect client, unary-transport.ts, and the server's unary stream handler,
// unary-server.ts), through an internal client with the shared secret and a
// deadline, against a billing stand-in that answers at once. Prints microseconds
// per call for three rounds of each after a warm-up; over HTTP/2 the CPU of client
// and server together (one process), with 50 calls in flight.
//
// Environment: BENCH_RPC_CALLS (in-process calls per round, default 60,000),
// BENCH_RPC_HTTP2_CALLS (default 20,000).
import { BillingService } from "@orvado/proto";
import { internalClient } from "../libs/rpc/src/client.ts";
import { startBillingStandIn, TEST_SECRET } from "../libs/rpc/src/test-support.ts";

const CALLS = Number(process.env.BENCH_RPC_CALLS ?? 60_000);
const HTTP2_CALLS = Number(process.env.BENCH_RPC_HTTP2_CALLS ?? 20_000);
const IN_FLIGHT = 50;
const server = await startBillingStandIn();
const client = internalClient(BillingService, server.url, TEST_SECRET);
const callRound = async (count: number) => {
  for (let index = 0; index < count; index += 1) await client.getCost({ requestId: `req_${index}` }, { timeoutMs: 10_000 });
};
await callRound(CALLS / 3);
for (let round = 1; round <= 3; round += 1) {
  const started = process.hrtime.bigint();
  await callRound(CALLS);
  const microsPerCall = Number(process.hrtime.bigint() - started) / 1000 / CALLS;
  process.stdout.write(`round ${round}: ${microsPerCall.toFixed(1)} µs per in-process call (${CALLS} calls)\n`);
}

const overHttp2 = internalClient(BillingService, server.url, TEST_SECRET, { transport: "http2" });
const http2Round = async (count: number) => {
  let next = 0;
  const caller = async () => {
    while (next < count) await overHttp2.getCost({ requestId: `req_${next++}` }, { timeoutMs: 10_000 });
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, caller));
};
await http2Round(HTTP2_CALLS / 4);
for (let round = 1; round <= 3; round += 1) {
  const before = process.cpuUsage();
  await http2Round(HTTP2_CALLS);
  const used = process.cpuUsage(before);
  process.stdout.write(`round ${round}: ${((used.user + used.system) / HTTP2_CALLS).toFixed(1)} µs of CPU per call over HTTP/2, client and server (${HTTP2_CALLS} calls, ${IN_FLIGHT} in flight)\n`);
}
await server.close();
process.exit(0);
