import { parseArgs } from "node:util";
import { SIMULATED_PROVIDERS, startSimulator, type SimulatedProvider } from "./index.ts";

// One simulator as its own process, for benchmarks:
//   node --import tsx libs/simulators/src/serve.ts <provider> --port N --latency-ms M

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: {
    port: { type: "string", default: "0" },
    host: { type: "string", default: "127.0.0.1" },
    "latency-ms": { type: "string", default: "0" },
    mode: { type: "string", default: "ok" },
    "api-key": { type: "string" },
  },
});

const provider = positionals[0] as SimulatedProvider | undefined;
if (!provider || !SIMULATED_PROVIDERS.includes(provider)) {
  console.error(`usage: serve.ts <${SIMULATED_PROVIDERS.join("|")}> [--port N] [--latency-ms M] [--mode ok|refuse|fail|malformed|hang|slow-poll] [--api-key K]`);
  process.exit(2);
}
const sim = await startSimulator(provider, {
  port: Number(values.port),
  host: values.host,
  behaviour: { latencyMs: Number(values["latency-ms"]), mode: values.mode as never, apiKey: values["api-key"] },
});
// One line a parent process can parse to learn the address.
console.log(JSON.stringify({ provider, baseUrl: sim.baseUrl, pid: process.pid }));
const stop = () => void sim.close().then(() => process.exit(0));
process.on("SIGINT", stop);
process.on("SIGTERM", stop);
