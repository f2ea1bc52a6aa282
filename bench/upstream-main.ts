// `node --import tsx bench/upstream-main.ts [--port N] [--latency-ms M] [--image solid|photo]`: the fake
// upstream in its own process; prints BENCH_READY {"url":…} once listening.
import { parseArgs } from "node:util";
import { startFakeUpstream } from "./fake-upstream.ts";
import { READY_MARKER } from "./processes.ts";

const { values } = parseArgs({ options: { port: { type: "string", default: "0" }, "latency-ms": { type: "string", default: "0" }, image: { type: "string", default: "solid" } } });
if (values.image !== "solid" && values.image !== "photo") throw new Error(`--image must be solid or photo, not ${values.image}`);
const upstream = await startFakeUpstream({ port: Number(values.port), latencyMs: Number(values["latency-ms"]), image: values.image });
process.stdout.write(`${READY_MARKER}${JSON.stringify({ url: upstream.url, pid: process.pid })}\n`);
const stop = async () => {
  await upstream.close();
  process.exit(0);
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
