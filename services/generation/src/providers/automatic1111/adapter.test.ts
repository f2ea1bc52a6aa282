import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import sharp from "sharp";
import { startSimulator, type Simulator } from "@orvado/simulators";
import { parseCatalog, type ChannelConfig } from "../../catalog.ts";
import { generateOnChannel, type UpstreamOutcome, type UpstreamSettings } from "../upstream.ts";
import type { UpstreamProgress, UpstreamRequest } from "../types.ts";
import { authorizationFor } from "./adapter.ts";

// The automatic1111 adapter over real HTTP on 127.0.0.1 against the A1111 protocol
// simulator (libs/simulators), through the gateway's own upstream call (upstream.ts). Every
// request is under the channel's baseUrl, so no private-network opt-in is needed.

const KEY = "artist:brush";
const settings: UpstreamSettings = { jobTimeoutMs: 600_000, allowPrivateUpstreams: false, maxUpstreamBytes: 50 * 1024 * 1024 };
let sim: Simulator;

beforeAll(async () => {
  sim = await startSimulator("automatic1111", { behaviour: { apiKey: KEY } });
});
afterAll(() => sim.close());
beforeEach(() => {
  sim.reset();
  sim.behave({ apiKey: KEY });
});

function channel(extra: Record<string, unknown> = {}): ChannelConfig {
  const catalog = parseCatalog({
    models: [
      {
        id: "beta",
        family: "beta",
        tiers: ["1K", "2K"],
        channels: [{ name: "gpu", provider: "automatic1111", baseUrl: sim.baseUrl, apiKeyEnv: "K", capacity: 1, pollIntervalMs: 25, ...extra }],
      },
    ],
  });
  return catalog.get("beta")!.channels[0]!;
}

function run(request: Partial<UpstreamRequest>, options: { extra?: Record<string, unknown>; onProgress?: (progress: UpstreamProgress) => void; signal?: AbortSignal } = {}) {
  const full: UpstreamRequest = { prompt: "a lighthouse", width: 1024, height: 1024, n: 1, quality: undefined, ...request };
  return generateOnChannel(channel(options.extra), KEY, full, options.signal ?? AbortSignal.timeout(30_000), settings, undefined, options.onProgress);
}

async function sizes(outcome: UpstreamOutcome) {
  if (!outcome.ok) throw new Error(`expected images, got ${outcome.kind}: ${outcome.detail}`);
  return Promise.all(outcome.images.map(async (png) => {
    const meta = await sharp(png).metadata();
    return [meta.format, meta.width, meta.height];
  }));
}

// biome-ignore lint/suspicious/noExplicitAny: the test reads fields of a request body whose shape it asserts
const sent = (route: string): any => sim.received(route).at(-1)?.body;

describe("the automatic1111 adapter", () => {
  it("generates the requested size through txt2img, with basic auth, a random seed and the channel's settings", async () => {
    const outcome = await run({ width: 1536, height: 1024 }, { extra: { steps: 12, sampler: "DPM++ 2M", negativePrompt: "blurry" } });
    expect(await sizes(outcome)).toEqual([["png", 1536, 1024]]);
    expect(sent("txt2img")).toMatchObject({
      prompt: "a lighthouse",
      negative_prompt: "blurry",
      width: 1536,
      height: 1024,
      seed: -1,
      steps: 12,
      sampler_name: "DPM++ 2M",
      batch_size: 1,
      n_iter: 1,
      send_images: true,
      save_images: false,
    });
    expect(sim.stats.lastHeaders?.authorization).toBe(authorizationFor(KEY));
  });

  it("asks for n images in one job: batch_size up to the channel's maxImagesPerCall, the rest in rounds", async () => {
    expect(await sizes(await run({ n: 3, width: 512, height: 512 }))).toHaveLength(3);
    expect(sent("txt2img")).toMatchObject({ batch_size: 3, n_iter: 1 });
    expect(await sizes(await run({ n: 5, width: 256, height: 256 }, { extra: { maxImagesPerCall: 2 } }))).toEqual(Array(5).fill(["png", 256, 256]));
    expect(sent("txt2img")).toMatchObject({ batch_size: 2, n_iter: 3 });
    expect(sim.count("txt2img")).toBe(2);
  });

  it("reports rising progress and the server's preview while the call runs, and nothing after", async () => {
    const reports: UpstreamProgress[] = [];
    const outcome = await run({ prompt: "slowly [sim:delay=800]", width: 256, height: 256 }, { extra: { steps: 8 }, onProgress: (progress) => reports.push(progress) });
    expect(await sizes(outcome)).toEqual([["png", 256, 256]]);
    const fractions = reports.flatMap((report) => (report.fraction === undefined ? [] : [report.fraction]));
    expect(fractions.length).toBeGreaterThan(2);
    expect(fractions.every((fraction, index) => index === 0 || fraction > fractions[index - 1]!)).toBe(true);
    const preview = reports.find((report) => report.preview)!.preview!;
    expect(preview.mediaType).toBe("image/png");
    expect((await sharp(preview.bytes).metadata()).width).toBe(64);
    expect(sim.received("progress").every((request) => request.query.skip_current_image === "false")).toBe(true);
    const after = reports.length;
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(reports.length).toBe(after);
  });

  it("does not poll progress for a job without a listener", async () => {
    await run({ prompt: "quietly [sim:delay=200]", width: 128, height: 128 });
    expect(sim.count("progress")).toBe(0);
  });

  it("edits through img2img with the input image and the mask turned into A1111's white-is-inpaint mask", async () => {
    const input = await sharp({ create: { width: 64, height: 64, channels: 3, background: "#c81414" } }).png().toBuffer();
    // OpenAI's rule: transparent on the left half (change it), opaque on the right (keep it).
    const pixels = Buffer.alloc(64 * 64 * 4);
    for (let index = 0; index < 64 * 64; index += 1) pixels[index * 4 + 3] = index % 64 < 32 ? 0 : 255;
    const mask = await sharp(pixels, { raw: { width: 64, height: 64, channels: 4 } }).png().toBuffer();
    const outcome = await run({ prompt: "make it blue", width: 768, height: 512, edit: { images: [input], mask } });
    expect(await sizes(outcome)).toEqual([["png", 768, 512]]);
    expect(sim.count("txt2img")).toBe(0);
    const body = sent("img2img");
    expect(body).toMatchObject({ prompt: "make it blue", width: 768, height: 512, init_images: [input.toString("base64")], inpainting_mask_invert: 0, inpainting_fill: 1 });
    const converted = Buffer.from(body.mask, "base64");
    const meta = await sharp(converted).metadata();
    expect([meta.width, meta.height, meta.channels]).toEqual([64, 64, 1]);
    const data = await sharp(converted).extractChannel(0).raw().toBuffer();
    expect([data[0], data[63]]).toEqual([255, 0]);
    expect(sim.stats.lastInputs).toEqual({ images: 1, mask: true });
  });

  it("edits without a mask through img2img alone", async () => {
    const input = await sharp({ create: { width: 32, height: 32, channels: 3, background: "#204060" } }).png().toBuffer();
    expect(await sizes(await run({ prompt: "redraw", width: 256, height: 256, edit: { images: [input] } }))).toEqual([["png", 256, 256]]);
    expect(sent("img2img").mask).toBeUndefined();
    expect(sim.stats.lastInputs).toEqual({ images: 1, mask: false });
  });

  it("interrupts a job over the channel's limit, so the server stops drawing it, and fails", async () => {
    const outcome = await run({ prompt: "forever [sim:delay=60000]", width: 128, height: 128 }, { extra: { timeoutMs: 300 } });
    expect(outcome).toMatchObject({ ok: false, kind: "failed" });
    expect(sim.count("interrupt")).toBe(1);
    // The server is free again: the next job is not queued behind a minute of drawing.
    expect(await sizes(await run({ prompt: "next", width: 128, height: 128 }, { signal: AbortSignal.timeout(5_000) }))).toEqual([["png", 128, 128]]);
  });

  it("interrupts when the job's own limit ends the call, rethrowing the abort", async () => {
    const signal = AbortSignal.timeout(300);
    await expect(run({ prompt: "hung [sim:delay=60000]", width: 128, height: 128 }, { signal })).rejects.toThrow();
    expect(sim.count("interrupt")).toBe(1);
  });

  it("fails with the server's own message kept", async () => {
    const sampler = await run({}, { extra: { sampler: "Nope" } });
    expect(sampler).toMatchObject({ ok: false, kind: "failed" });
    expect(sampler.ok ? "" : sampler.detail).toContain("A1111: Sampler not found (HTTP 404)");
    const oom = await run({ prompt: "x [sim:fail]" });
    expect(oom.ok ? "" : oom.detail).toContain("A1111: CUDA out of memory");
    const malformed = await run({ prompt: "x [sim:malformed]" });
    expect(malformed.ok ? "" : malformed.detail).toContain("A1111: the answer is not JSON");
  });

  it("fails on a wrong key, and sends none when the channel has none", async () => {
    const outcome = await generateOnChannel(channel(), "artist:wrong", { prompt: "x", width: 64, height: 64, n: 1, quality: undefined }, AbortSignal.timeout(10_000), settings);
    expect(outcome).toMatchObject({ ok: false, kind: "failed" });
    sim.behave({ apiKey: undefined });
    const open = channel({ apiKeyEnv: undefined });
    expect(await sizes(await generateOnChannel(open, undefined, { prompt: "x", width: 64, height: 64, n: 1, quality: undefined }, AbortSignal.timeout(10_000), settings))).toEqual([["png", 64, 64]]);
    expect(sim.stats.lastHeaders?.authorization).toBeUndefined();
    expect(authorizationFor("proxy-token")).toBe("Bearer proxy-token");
  });
});
