// `npm run bench:rpc`: the CPU cost of one unary call between services in one
// process (libs/rpc direct-transport.ts), through an internal client with the
// shared secret and a deadline, against a billing stand-in that answers at once.
// Prints microseconds per call for three rounds after a warm-up.
//
// Environment: BENCH_RPC_CALLS (per round, default 60,000).
import { BillingService } from "@orvado/proto";
import { internalClient } from "../libs/rpc/src/client.ts";
import { startBillingStandIn, TEST_SECRET } from "../libs/rpc/src/test-support.ts";

const CALLS = Number(process.env.BENCH_RPC_CALLS ?? 60_000);
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
await server.close();
