// `node --import tsx bench/upstream-call.ts`: the CPU one upstream call costs
// generation (generateOnChannel: the AI SDK, the guarded fetch, reading the
// image) when the answer carries a photo-sized image, not the benchmark's
// few-kB solid colour: the fake upstream's 1024x1024 PNG of noise (about
// 3.3 MB, 4.4 MB as base64 JSON), 20 calls one after another.
import type { ChannelConfig } from "../services/generation/src/catalog.ts";
import type { UpstreamRequest } from "../services/generation/src/providers/types.ts";
import { generateOnChannel } from "../services/generation/src/providers/upstream.ts";
import { startFakeUpstream } from "./fake-upstream.ts";

const CALLS = 20;
const upstream = await startFakeUpstream({ image: "photo" });
const channel = { name: "photo", provider: "openai-compatible", upstreamModel: "m", baseUrl: `${upstream.url}/v1`, priority: 0, capacity: 100 } as ChannelConfig;
const settings = { jobTimeoutMs: 60_000, allowPrivateUpstreams: true, maxUpstreamBytes: 50_000_000 };
const request = { prompt: "a photo", width: 1024, height: 1024, n: 1 } as UpstreamRequest;
const signal = new AbortController().signal;
const call = async () => {
  const outcome = await generateOnChannel(channel, "sk-local", request, signal, settings);
  if (!outcome.ok) throw new Error(`the call failed: ${outcome.detail}`);
  return outcome.images[0]!.length;
};

let pngBytes = 0;
for (let warm = 0; warm < 3; warm += 1) pngBytes = await call();
const times: number[] = [];
const cpuBefore = process.cpuUsage();
for (let index = 0; index < CALLS; index += 1) {
  const started = performance.now();
  await call();
  times.push(performance.now() - started);
}
const cpu = process.cpuUsage(cpuBefore);
times.sort((a, b) => a - b);
console.log(
  `PNG ${(pngBytes / 1e6).toFixed(2)} MB: p50 ${times[CALLS >> 1]!.toFixed(1)} ms, ` +
    `${((cpu.user + cpu.system) / CALLS / 1000).toFixed(1)} ms of CPU per call (the fake upstream's included)`,
);
await upstream.close();
