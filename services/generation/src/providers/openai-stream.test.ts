import { afterAll, beforeAll, describe, expect, it } from "vitest";
import sharp from "sharp";
import { startSimulator, type SimulatedProvider, type Simulator } from "@orvado/simulators";
import { parseCatalog, type ChannelConfig } from "../catalog.ts";
import { FAILED_MESSAGE, REFUSED_MESSAGE, generateOnChannel, type UpstreamOutcome, type UpstreamSettings } from "./upstream.ts";
import type { UpstreamProgress, UpstreamRequest } from "./types.ts";
import { AnswerGate } from "../answer-gate.ts";
import { createServer } from "node:http";
import { once } from "node:events";
import type { AddressInfo } from "node:net";

// OpenAI's streamed images (openai-stream.ts) over real HTTP against the OpenAI and
// OpenAI-compatible protocol simulators, which answer `stream: true` with server-sent events:
// what the job's onProgress receives, and what the call ends in.

const API_KEY = "sk-test-stream-key-0123456789";
const PROVIDERS: SimulatedProvider[] = ["openai", "openai-compatible"];
const sims = new Map<SimulatedProvider, Simulator>();
const settings: UpstreamSettings = { jobTimeoutMs: 600_000, allowPrivateUpstreams: true, maxUpstreamBytes: 50 * 1024 * 1024 };

beforeAll(async () => {
  for (const provider of PROVIDERS) sims.set(provider, await startSimulator(provider, { behaviour: { apiKey: API_KEY } }));
});
afterAll(async () => {
  await Promise.all([...sims.values()].map((sim) => sim.close()));
});

function channelFor(provider: SimulatedProvider): ChannelConfig {
  const catalog = parseCatalog({
    models: [
      {
        id: "alpha",
        family: "alpha",
        tiers: ["1K"],
        channels: [{ name: "one", provider, upstreamModel: "gpt-image-1", baseUrl: sims.get(provider)!.baseUrl, apiKeyEnv: "K", capacity: 4 }],
      },
    ],
  });
  return catalog.get("alpha")!.channels[0]!;
}

interface Run {
  outcome: UpstreamOutcome;
  progress: UpstreamProgress[];
}

async function run(provider: SimulatedProvider, request: Partial<UpstreamRequest>, options: { listen?: boolean; settings?: Partial<UpstreamSettings>; answers?: AnswerGate } = {}): Promise<Run> {
  const progress: UpstreamProgress[] = [];
  const full: UpstreamRequest = { prompt: "a lighthouse", width: 1024, height: 1024, n: 1, quality: undefined, ...request };
  const onProgress = options.listen === false ? undefined : (update: UpstreamProgress) => progress.push(update);
  const pass = options.answers?.pass();
  const outcome = await generateOnChannel(channelFor(provider), API_KEY, full, AbortSignal.timeout(30_000), { ...settings, ...options.settings }, pass, onProgress);
  pass?.release();
  return { outcome, progress };
}

const formatOf = async (bytes: Uint8Array) => {
  const meta = await sharp(bytes).metadata();
  return [meta.format, meta.width, meta.height];
};

async function images(outcome: UpstreamOutcome) {
  if (!outcome.ok) throw new Error(`expected images, got ${outcome.kind}: ${outcome.detail}`);
  return Promise.all(outcome.images.map(formatOf));
}

const solid = (r: number, g: number, b: number, alpha?: number) =>
  sharp({ create: { width: 64, height: 64, channels: alpha === undefined ? 3 : 4, background: { r, g, b, ...(alpha !== undefined && { alpha }) } } })
    .png()
    .toBuffer();

describe.each(PROVIDERS)("%s channel, partial images streamed over HTTP", (provider) => {
  const sim = () => sims.get(provider)!;

  it("a generation with partialImages 2 gives onProgress two previews, then the final image", async () => {
    const { outcome, progress } = await run(provider, { partialImages: 2, width: 1536, height: 1024 });
    expect(progress).toHaveLength(2);
    for (const update of progress) {
      expect(update.preview?.mediaType).toBe("image/png");
      expect((await formatOf(update.preview!.bytes))[0]).toBe("png");
    }
    expect(await images(outcome)).toEqual([["png", 1536, 1024]]);
    expect(sim().stats.lastBody).toMatchObject({ model: "gpt-image-1", stream: true, partial_images: 2, n: 1 });
    expect(String(sim().stats.lastHeaders?.authorization)).toBe(`Bearer ${API_KEY}`);
  });

  it("an edit with partialImages 2 streams from /images/edits (multipart) the same way", async () => {
    const edit = { images: [await solid(200, 20, 20), await solid(20, 20, 200)], mask: await solid(0, 0, 0, 0) };
    const before = sim().count("edit");
    const { outcome, progress } = await run(provider, { partialImages: 2, width: 768, height: 512, edit });
    expect(progress.map((update) => update.preview?.mediaType)).toEqual(["image/png", "image/png"]);
    expect(await images(outcome)).toEqual([["png", 768, 512]]);
    expect(sim().count("edit")).toBe(before + 1);
    expect(sim().stats.lastBody).toMatchObject({ stream: true, partial_images: 2, images: 2, mask: true });
  });

  it("n images in one streamed call: each completed event is one image", async () => {
    const { outcome, progress } = await run(provider, { partialImages: 1, n: 2, width: 512, height: 512 });
    expect(progress).toHaveLength(1);
    expect(await images(outcome)).toEqual([
      ["png", 512, 512],
      ["png", 512, 512],
    ]);
  });

  it("an error event mid-stream fails the channel (a failure, which fails over), after the previews it sent", async () => {
    const { outcome, progress } = await run(provider, { prompt: "a cat [sim:fail-mid-stream]", partialImages: 2 });
    expect(outcome).toMatchObject({ ok: false, kind: "failed", message: FAILED_MESSAGE });
    expect(outcome.ok ? "" : outcome.detail).toMatch(/event stream failed/);
    expect(progress).toHaveLength(1);
  });

  it("a content-policy error event mid-stream is a refusal", async () => {
    const { outcome } = await run(provider, { prompt: "something forbidden [sim:refuse-mid-stream]", partialImages: 2 });
    expect(outcome).toMatchObject({ ok: false, kind: "refused", message: REFUSED_MESSAGE });
  });

  it("a refusal before the stream began (a 400 answer) is a refusal too", async () => {
    const { outcome, progress } = await run(provider, { prompt: "something forbidden [sim:refuse]", partialImages: 2 });
    expect(outcome).toMatchObject({ ok: false, kind: "refused" });
    expect(progress).toEqual([]);
  });

  it("a stream longer than the byte limit is cut, and the call fails (generation and edit)", async () => {
    // The previews fit the limit; the final image (a 1024² PNG, more as base64) does not.
    for (const edit of [undefined, { images: [await solid(5, 5, 5)] }]) {
      const { outcome, progress } = await run(provider, { prompt: "a long stream", partialImages: 1, edit }, { settings: { maxUpstreamBytes: 8 * 1024 } });
      expect(outcome).toMatchObject({ ok: false, kind: "failed" });
      expect(outcome.ok ? "" : outcome.detail).toMatch(/8192-byte limit/);
      expect(progress).toHaveLength(1);
    }
  });

  it("the job's abort ends a stream in progress: the abort is rethrown and the connection let go", async () => {
    const leaving = new AbortController();
    const progress: UpstreamProgress[] = [];
    const request: UpstreamRequest = { prompt: "a slow render [sim:delay=3000]", width: 1024, height: 1024, n: 1, quality: undefined, partialImages: 2 };
    const call = generateOnChannel(channelFor(provider), API_KEY, request, leaving.signal, settings, undefined, (update) => {
      progress.push(update);
      leaving.abort(new Error("the client left"));
    });
    await expect(call).rejects.toThrow("the client left");
    expect(progress).toHaveLength(1);
    while (sim().inFlight > 0) await new Promise((resolve) => setTimeout(resolve, 10));
  });

  it("through the answer gate, a streamed answer takes its place once read and delivers", async () => {
    const gate = new AnswerGate({ answers: 1, bytes: 256 * 1024 * 1024 });
    const { outcome, progress } = await run(provider, { partialImages: 1 }, { answers: gate });
    expect(progress).toHaveLength(1);
    expect(await images(outcome)).toEqual([["png", 1024, 1024]]);
    expect(gate.held).toEqual({ answers: 0, bytes: 0 });
  });

  it("without partial images, or with nobody listening, no stream is asked for (the AI SDK's call as always)", async () => {
    for (const [request, listen] of [
      [{}, true],
      [{ partialImages: 0 }, true],
      [{ partialImages: 2 }, false],
    ] as const) {
      const { outcome, progress } = await run(provider, request, { listen });
      expect(await images(outcome)).toEqual([["png", 1024, 1024]]);
      expect(progress).toEqual([]);
      expect(sim().stats.lastBody).not.toHaveProperty("stream");
      expect(sim().stats.lastBody).not.toHaveProperty("partial_images");
    }
  });
});

describe("an OpenAI-compatible server that does not stream (HTTP, a local server answering JSON)", () => {
  it("answers stream: true with JSON: its images are delivered, without partial images", async () => {
    const png = await solid(1, 2, 3);
    let received: Record<string, unknown> = {};
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (chunk: Buffer) => chunks.push(chunk));
      req.on("end", () => {
        received = JSON.parse(Buffer.concat(chunks).toString("utf8"));
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ created: 1, data: [{ b64_json: png.toString("base64") }] }));
      });
    });
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    try {
      const { port } = server.address() as AddressInfo;
      const catalog = parseCatalog({
        models: [{ id: "alpha", family: "alpha", tiers: ["1K"], channels: [{ name: "plain", provider: "openai-compatible", upstreamModel: "m", baseUrl: `http://127.0.0.1:${port}/v1`, capacity: 1 }] }],
      });
      const progress: UpstreamProgress[] = [];
      const request: UpstreamRequest = { prompt: "x", width: 64, height: 64, n: 1, quality: undefined, partialImages: 2 };
      const outcome = await generateOnChannel(catalog.get("alpha")!.channels[0]!, undefined, request, AbortSignal.timeout(10_000), settings, undefined, (update) => progress.push(update));
      expect(await images(outcome)).toEqual([["png", 64, 64]]);
      expect(progress).toEqual([]);
      expect(received).toMatchObject({ stream: true, partial_images: 2 });
    } finally {
      server.close();
    }
  });
});

describe("a hostile OpenAI-compatible event stream (HTTP, a local server answering server-sent events)", () => {
  /** A server that answers every call with these events, then ends the stream. */
  async function streamingServer(events: object[]) {
    const server = createServer((req, res) => {
      req.resume();
      req.on("end", () => {
        res.writeHead(200, { "content-type": "text/event-stream" });
        for (const event of events) res.write(`event: ${(event as { type: string }).type}\ndata: ${JSON.stringify(event)}\n\n`);
        res.end();
      });
    });
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    const { port } = server.address() as AddressInfo;
    const catalog = parseCatalog({
      models: [{ id: "alpha", family: "alpha", tiers: ["1K"], channels: [{ name: "hostile", provider: "openai-compatible", upstreamModel: "m", baseUrl: `http://127.0.0.1:${port}/v1`, capacity: 1 }] }],
    });
    return { server, channel: catalog.get("alpha")!.channels[0]! };
  }

  it("passes on at most the partial images asked for, however many the upstream sends", async () => {
    const png = (await solid(9, 9, 9)).toString("base64");
    const partial = { type: "image_generation.partial_image", b64_json: png, output_format: "png" };
    const { server, channel } = await streamingServer([...Array.from({ length: 20 }, () => partial), { type: "image_generation.completed", b64_json: png }]);
    try {
      const progress: UpstreamProgress[] = [];
      const request: UpstreamRequest = { prompt: "x", width: 64, height: 64, n: 1, quality: undefined, partialImages: 2 };
      const outcome = await generateOnChannel(channel, undefined, request, AbortSignal.timeout(10_000), settings, undefined, (update) => progress.push(update));
      expect(await images(outcome)).toEqual([["png", 64, 64]]);
      expect(progress.filter((update) => update.preview)).toHaveLength(2);
    } finally {
      server.close();
    }
  });
});
