import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { fileURLToPath } from "node:url";
import sharp from "sharp";
import { startSimulator, type Simulator } from "@orvado/simulators";
import { parseCatalog, type ChannelConfig } from "../../catalog.ts";
import { FAILED_MESSAGE, generateOnChannel, type UpstreamOutcome, type UpstreamSettings } from "../upstream.ts";
import type { UpstreamProgress, UpstreamRequest } from "../types.ts";
import { channelCanEdit } from "../edit-support.ts";

// The comfyui adapter through upstream.ts (generateOnChannel), over real HTTP and a real
// websocket (the `ws` package) against the ComfyUI protocol simulator, with the stock
// workflows shipped in config/comfyui/.

const CONFIG_DIR = fileURLToPath(new URL("../../../../../config", import.meta.url));
const settings: UpstreamSettings = { jobTimeoutMs: 600_000, allowPrivateUpstreams: false, maxUpstreamBytes: 50 * 1024 * 1024 };
let sim: Simulator;

beforeAll(async () => {
  sim = await startSimulator("comfyui", { behaviour: { steps: 4 } });
});
afterAll(() => sim.close());
beforeEach(() => {
  sim.reset();
  sim.behave({ steps: 4 });
});

function channel(extra: Record<string, unknown> = {}): ChannelConfig {
  const catalog = parseCatalog(
    {
      models: [
        {
          id: "local",
          family: "beta",
          tiers: ["1K"],
          edits: true,
          channels: [
            {
              name: "gpu",
              provider: "comfyui",
              baseUrl: sim.baseUrl,
              workflow: "comfyui/text-to-image.json",
              edit: { workflow: "comfyui/inpaint.json", image: "10.image", mask: "11.image", inputs: { width: null, height: null, batchSize: null } },
              capacity: 2,
              allowPrivateNetwork: true,
              pollIntervalMs: 20,
              ...extra,
            },
          ],
        },
      ],
    },
    "models file",
    CONFIG_DIR,
  );
  return catalog.get("local")!.channels[0]!;
}

interface RunOptions {
  signal?: AbortSignal;
  extra?: Record<string, unknown>;
  onProgress?: (progress: UpstreamProgress) => void;
  apiKey?: string;
  maxUpstreamBytes?: number;
}

function run(request: Partial<UpstreamRequest>, options: RunOptions = {}): Promise<UpstreamOutcome> {
  const job: UpstreamRequest = { prompt: "a lighthouse", width: 1024, height: 1024, n: 1, quality: undefined, ...request };
  const limits = { ...settings, maxUpstreamBytes: options.maxUpstreamBytes ?? settings.maxUpstreamBytes };
  return generateOnChannel(channel(options.extra), options.apiKey, job, options.signal ?? AbortSignal.timeout(30_000), limits, undefined, options.onProgress);
}

const dimensions = async (png: Buffer) => {
  const meta = await sharp(png).metadata();
  return [meta.format, meta.width, meta.height];
};

describe("the comfyui adapter (HTTP + websocket against the ComfyUI simulator)", () => {
  it("queues the stock workflow with the job's values and answers images of the requested size", async () => {
    const outcome = await run({ prompt: "a red fox", width: 768, height: 512, n: 2 });
    expect(outcome.ok).toBe(true);
    if (!outcome.ok) return;
    expect(outcome.images).toHaveLength(2);
    expect(await dimensions(outcome.images[0]!)).toEqual(["png", 768, 512]);
    const graph = sim.stats.lastWorkflow!;
    expect(graph["6"]!.inputs.text).toBe("a red fox");
    expect(graph["7"]!.inputs.text).toBe("text, watermark");
    expect(graph["5"]!.inputs).toMatchObject({ width: 768, height: 512, batch_size: 2 });
    expect(typeof graph["3"]!.inputs.seed).toBe("number");
    // One prompt for both images (the batch), one socket, each image fetched with /view.
    expect([sim.count("prompt"), sim.count("ws"), sim.count("view")]).toEqual([1, 1, 2]);
  });

  it("splits n above the channel's batch maximum into prompts, each with its own random seed", async () => {
    const outcome = await run({ n: 3 }, { extra: { maxImagesPerCall: 1 } });
    expect(outcome.ok && outcome.images.length).toBe(3);
    expect(sim.count("prompt")).toBe(3);
  });

  it("rounds a side that is not a multiple of 8 up for the latent, then crops back to the exact size", async () => {
    const outcome = await run({ width: 1001, height: 500 });
    expect(sim.stats.lastWorkflow!["5"]!.inputs).toMatchObject({ width: 1008, height: 504 });
    expect(outcome.ok && (await dimensions(outcome.images[0]!))).toEqual(["png", 1001, 500]);
  });

  it("reports rising progress fractions and the JPEG previews from the socket's binary frames", async () => {
    const progress: UpstreamProgress[] = [];
    const outcome = await run({}, { onProgress: (p) => progress.push(p) });
    expect(outcome.ok).toBe(true);
    const fractions = progress.flatMap((p) => (p.fraction === undefined ? [] : [p.fraction]));
    expect(fractions).toEqual([0.25, 0.5, 0.75, 1]);
    const previews = progress.flatMap((p) => (p.preview ? [p.preview] : []));
    expect(previews).toHaveLength(4);
    expect(previews[0]!.mediaType).toBe("image/jpeg");
    expect((await sharp(previews[0]!.bytes).metadata()).format).toBe("jpeg");
  });

  it("passes on no preview frame whose bytes are not an image, and still every fraction", async () => {
    sim.behave({ steps: 4, hostilePreviews: { bytes: 1000, image: false } });
    const progress: UpstreamProgress[] = [];
    const outcome = await run({}, { onProgress: (p) => progress.push(p) });
    expect(outcome.ok).toBe(true);
    expect(progress.filter((p) => p.preview)).toEqual([]);
    expect(progress.filter((p) => p.fraction !== undefined)).toHaveLength(4);
  });

  it("passes on only fractions from 0 to 1, and still rising ones, when a progress message overflows (1e999 of 1e999)", async () => {
    sim.behave({ steps: 4, infiniteProgress: true });
    const progress: UpstreamProgress[] = [];
    const outcome = await run({}, { onProgress: (p) => progress.push(p) });
    expect(outcome.ok).toBe(true);
    const fractions = progress.flatMap((p) => (p.fraction === undefined ? [] : [p.fraction]));
    expect(fractions).toEqual([0.25, 0.5, 0.75, 1]);
  });

  it.each([
    ["executed", '{"type":"executed","data":{"prompt_id":"{prompt_id}","node":{"toString":1},"output":{}}}', true],
    ["execution_error", '{"type":"execution_error","data":{"prompt_id":"{prompt_id}","node_id":{"toString":1},"exception_message":"x"}}', false],
    ["execution_interrupted", '{"type":"execution_interrupted","data":{"prompt_id":"{prompt_id}","node_id":{"toString":1}}}', false],
  ])("reads a %s message naming a node no string can be made of without throwing out of the socket's listener", async (_type, message, ok) => {
    sim.behave({ steps: 2, rawMessage: message });
    const uncaught: unknown[] = [];
    const onUncaught = (error: unknown) => uncaught.push(error);
    process.on("uncaughtException", onUncaught);
    try {
      const outcome = await run({});
      expect(outcome.ok).toBe(ok);
      expect(uncaught).toEqual([]);
    } finally {
      process.off("uncaughtException", onUncaught);
    }
  });

  it("fails the job on a preview frame larger than the upstream byte limit (GENERATION_MAX_UPSTREAM_BYTES), passing on no preview", async () => {
    sim.behave({ steps: 2, hostilePreviews: { bytes: 300 * 1024, image: true } });
    const progress: UpstreamProgress[] = [];
    const outcome = await run({ width: 256, height: 256 }, { onProgress: (p) => progress.push(p), maxUpstreamBytes: 256 * 1024 });
    expect(outcome).toMatchObject({ ok: false, kind: "failed", message: FAILED_MESSAGE });
    expect(!outcome.ok && outcome.detail).toContain(`ComfyUI's websocket sent a message over ${256 * 1024} bytes`);
    expect(progress.filter((p) => p.preview)).toEqual([]);
  });

  it("reports one rising fraction for a job split into prompts that ComfyUI runs one after another", async () => {
    const progress: UpstreamProgress[] = [];
    const outcome = await run({ n: 2 }, { extra: { maxImagesPerCall: 1 }, onProgress: (p) => progress.push(p) });
    expect(outcome.ok && outcome.images.length).toBe(2);
    const fractions = progress.flatMap((p) => (p.fraction === undefined ? [] : [p.fraction]));
    expect(fractions).toEqual([0.125, 0.25, 0.375, 0.5, 0.625, 0.75, 0.875, 1]);
  });

  it("still answers the right image when the websocket drops mid-job, by polling the history", async () => {
    sim.behave({ steps: 6, dropSocketAtStep: 2, latencyMs: 600 });
    const progress: UpstreamProgress[] = [];
    const outcome = await run({ width: 640, height: 448 }, { onProgress: (p) => progress.push(p) });
    expect(outcome.ok && (await dimensions(outcome.images[0]!))).toEqual(["png", 640, 448]);
    // Progress stopped with the socket; the images came through the history.
    expect(progress.filter((p) => p.fraction !== undefined).length).toBeLessThan(6);
    expect(sim.count("history")).toBeGreaterThan(0);
  });

  it("fails with the node's message when the workflow errors while running (execution_error)", async () => {
    const outcome = await run({ prompt: "a storm [sim:fail]" });
    expect(outcome).toMatchObject({ ok: false, kind: "failed", message: FAILED_MESSAGE });
    expect(!outcome.ok && outcome.detail).toContain("ComfyUI node 3 (KSampler): Allocation on device would exceed allowed memory. (out of memory) [torch.OutOfMemoryError]");
  });

  it("reads a node's error from the history when the socket dropped before it", async () => {
    sim.behave({ steps: 3, dropSocketAtStep: 1, latencyMs: 300 });
    const outcome = await run({ prompt: "a storm [sim:fail]" });
    expect(!outcome.ok && outcome.detail).toContain("ComfyUI node 3 (KSampler): Allocation on device would exceed allowed memory.");
    expect(sim.count("history")).toBeGreaterThan(0);
  });

  it("fails with each node's validation error when ComfyUI rejects the graph (node_errors)", async () => {
    const outcome = await run({ width: 20_000, height: 512 });
    expect(outcome.ok).toBe(false);
    expect(!outcome.ok && outcome.detail).toContain("ComfyUI rejected the workflow (400): Prompt outputs failed validation; ComfyUI node 5 (EmptyLatentImage): Value 20000 bigger than max of 16384: width");
  });

  it("follows the job by its history when the websocket never opens", async () => {
    sim.behave({ refuseSockets: true });
    const outcome = await run({ width: 512, height: 512 });
    expect(outcome.ok && (await dimensions(outcome.images[0]!))).toEqual(["png", 512, 512]);
    expect([sim.count("ws"), sim.count("prompt")]).toEqual([0, 1]);
    expect(sim.count("history")).toBeGreaterThan(0);
  });

  it("interrupts the running prompt on ComfyUI when the job's limit aborts the call", async () => {
    // 100 steps over a minute: the call is aborted (as the job's limit does) at the first step's progress.
    sim.behave({ steps: 100 });
    const limit = new AbortController();
    const onProgress = () => limit.abort(new DOMException("The job's time limit", "TimeoutError"));
    const outcome = run({ prompt: "slow [sim:delay=60000]" }, { signal: limit.signal, onProgress });
    await expect(outcome).rejects.toThrow("The job's time limit");
    expect(sim.count("interrupt")).toBe(1);
    expect(sim.count("queue")).toBe(1);
    // The simulator ended the job as interrupted: the next job runs at once.
    const next = await run({});
    expect(next.ok).toBe(true);
  });

  it("uploads an edit's image and mask and sets them into the LoadImage and LoadImageMask nodes", async () => {
    const image = await sharp({ create: { width: 512, height: 384, channels: 4, background: { r: 10, g: 200, b: 30, alpha: 1 } } }).png().toBuffer();
    const mask = await sharp({ create: { width: 512, height: 384, channels: 4, background: { r: 0, g: 0, b: 0, alpha: 0 } } }).png().toBuffer();
    const outcome = await run({ prompt: "add a boat", width: 512, height: 384, n: 1, edit: { images: [image], mask } as UpstreamRequest["edit"] });
    expect(outcome.ok && (await dimensions(outcome.images[0]!))).toEqual(["png", 512, 384]);
    expect(sim.count("upload")).toBe(2);
    expect(sim.stats.lastInputs).toEqual({ images: 1, mask: true });
    const graph = sim.stats.lastWorkflow!;
    expect(graph["10"]!.inputs.image).toMatch(/^orvado-.*-image\.png$/);
    expect(graph["11"]!.inputs.image).toMatch(/^orvado-.*-mask\.png$/);
    expect(graph["6"]!.inputs.text).toBe("add a boat");
  });

  it("takes edits only on a channel that maps a LoadImage node, with a mask only where one is mapped", () => {
    expect(channelCanEdit(channel(), { withMask: true, images: 1 })).toBe(true);
    expect(channelCanEdit(channel({ edit: { workflow: "comfyui/inpaint.json", image: "10.image", inputs: { width: null, height: null, batchSize: null } } }), { withMask: true, images: 1 })).toBe(false);
    expect(channelCanEdit(channel({ edit: undefined }), { withMask: false, images: 1 })).toBe(false);
  });

  it("sends the channel's key as a bearer token on HTTP and on the websocket", async () => {
    sim.behave({ apiKey: "comfy-token" });
    const outcome = await run({}, { extra: { apiKeyEnv: "COMFY_TOKEN" }, apiKey: "comfy-token" });
    expect(outcome.ok).toBe(true);
    expect(sim.count("ws")).toBe(1);
    sim.behave({ apiKey: undefined });
  });

  it("opens the websocket of a server on a private address under the channel's baseUrl without the opt-in, as its HTTP requests", async () => {
    const outcome = await run({}, { extra: { allowPrivateNetwork: false } });
    expect(outcome.ok).toBe(true);
    expect(sim.count("ws")).toBe(1);
  });
});
