// `node --import tsx bench/upstream-call.ts`: the CPU one upstream call costs
// generation (generateOnChannel: the AI SDK, the guarded fetch, reading the
// image) when the answer carries a photo-sized image, not the benchmark's
// few-kB solid colour: a 1024x1024 PNG of noise (about 3.3 MB, 4.4 MB as
// base64 JSON) from a local OpenAI-style server, 20 calls one after another.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { randomBytes } from "node:crypto";
import sharp from "sharp";
import type { ChannelConfig } from "../services/generation/src/catalog.ts";
import type { UpstreamRequest } from "../services/generation/src/providers/types.ts";
import { generateOnChannel } from "../services/generation/src/providers/upstream.ts";

const CALLS = 20;
const png = await sharp(randomBytes(1024 * 1024 * 3), { raw: { width: 1024, height: 1024, channels: 3 } }).png({ compressionLevel: 1 }).toBuffer();
const body = JSON.stringify({ created: 1, data: [{ b64_json: png.toString("base64") }] });
const server = createServer((request, response) => {
  request.resume();
  request.on("end", () => {
    response.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
    response.end(body);
  });
});
await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
const channel = { name: "photo", provider: "openai-compatible", upstreamModel: "m", baseUrl, priority: 0, capacity: 100 } as ChannelConfig;
const settings = { jobTimeoutMs: 60_000, allowPrivateUpstreams: true, maxUpstreamBytes: 50_000_000 };
const request = { prompt: "a photo", width: 1024, height: 1024, n: 1 } as UpstreamRequest;
const signal = new AbortController().signal;
const call = async () => {
  const outcome = await generateOnChannel(channel, "sk-local", request, signal, settings);
  if (!outcome.ok) throw new Error(`the call failed: ${outcome.detail}`);
};

for (let warm = 0; warm < 3; warm += 1) await call();
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
  `PNG ${(png.length / 1e6).toFixed(2)} MB (${(body.length / 1e6).toFixed(2)} MB of JSON): p50 ${times[CALLS >> 1]!.toFixed(1)} ms, ` +
    `${((cpu.user + cpu.system) / CALLS / 1000).toFixed(1)} ms of CPU per call (the local server's included)`,
);
server.close();
