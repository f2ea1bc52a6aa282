import { afterAll, beforeAll, describe, expect, it } from "vitest";
import sharp from "sharp";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { once } from "node:events";
import { startSimulator, type SimulatedProvider, type Simulator } from "@orvado/simulators";
import { parseCatalog, type ChannelConfig } from "../catalog.ts";
import { FAILED_MESSAGE, REFUSED_MESSAGE, generateOnChannel, type UpstreamOutcome, type UpstreamSettings } from "./upstream.ts";
import { editSupport } from "./edit-support.ts";
import { AnswerGate, HOLD_BACK_AT, UNGATED_ANSWER_BYTES, type AnswerPass } from "../answer-gate.ts";

// Every provider adapter over real HTTP against its protocol simulator: the AI SDK
// package does the talking; these tests check what the gateway makes of the answers.

interface Case {
  label: string;
  provider: SimulatedProvider;
  upstreamModel: string;
  polled?: boolean;
}

const CASES: Case[] = [
  { label: "openai gpt-image-1", provider: "openai", upstreamModel: "gpt-image-1" },
  { label: "google gemini image", provider: "google", upstreamModel: "gemini-2.5-flash-image" },
  { label: "bytedance seedream", provider: "bytedance", upstreamModel: "seedream-4-0-250828" },
  { label: "black-forest-labs flux", provider: "black-forest-labs", upstreamModel: "flux-pro-1.1", polled: true },
  { label: "fal flux", provider: "fal", upstreamModel: "fal-ai/flux/dev" },
  { label: "replicate flux", provider: "replicate", upstreamModel: "black-forest-labs/flux-schnell", polled: true },
  { label: "openai-compatible", provider: "openai-compatible", upstreamModel: "local-image-model" },
];

const API_KEY = "sk-test-upstream-key-0123456789";
const sims = new Map<SimulatedProvider, Simulator>();
const settings: UpstreamSettings = { jobTimeoutMs: 600_000, allowPrivateUpstreams: true, maxUpstreamBytes: 50 * 1024 * 1024 };

beforeAll(async () => {
  for (const provider of new Set(CASES.map((c) => c.provider))) {
    sims.set(provider, await startSimulator(provider, { behaviour: { apiKey: API_KEY, pollsBeforeReady: 1, slowPolls: 6 } }));
  }
});
afterAll(async () => {
  await Promise.all([...sims.values()].map((sim) => sim.close()));
});

function channelFor(c: Case, extra: Partial<ChannelConfig> = {}): ChannelConfig {
  const sim = sims.get(c.provider)!;
  const catalog = parseCatalog({
    models: [
      {
        id: "beta",
        family: "beta",
        tiers: ["1K", "2K", "4K"],
        channels: [{ name: "one", provider: c.provider, upstreamModel: c.upstreamModel, baseUrl: sim.baseUrl, apiKeyEnv: "K", capacity: 4, pollIntervalMs: 20, ...extra }],
      },
    ],
  });
  return catalog.get("beta")!.channels[0]!;
}

const run = (
  c: Case,
  prompt: string,
  options: { width?: number; height?: number; n?: number; signal?: AbortSignal; extra?: Partial<ChannelConfig>; settings?: Partial<UpstreamSettings>; answers?: AnswerPass } = {},
) =>
  generateOnChannel(
    channelFor(c, options.extra),
    API_KEY,
    { prompt, width: options.width ?? 1024, height: options.height ?? 1024, n: options.n ?? 1, quality: undefined },
    options.signal ?? AbortSignal.timeout(60_000),
    { ...settings, ...options.settings },
    options.answers,
  );

// The two clock tests: a channel limit that the call's own (unpaused) work stays well inside even on a
// loaded CI machine, and a wait in line longer than it. At 300 ms, a simulator rendering an uncached
// 1024² PNG under a full test run once used the limit up before the answer reached the gate.
const CHANNEL_LIMIT_MS = 1_000;
const IN_LINE_MS = 1_300;

/** Runs the prompt once, so the simulator has its PNG rendered and the timed call is only the exchange. */
async function warmed(c: Case, prompt: string) {
  expect(await dimensions(await run(c, prompt))).toEqual([["png", 1024, 1024]]);
}

/** Waits until `reached()`; fails at once, saying how the call ended, if it ended first (rather than spinning until the test's timeout). */
async function beforeTheEnd(reached: () => boolean, outcome: Promise<UpstreamOutcome>) {
  let ended: UpstreamOutcome | Error | undefined;
  outcome.then((value) => (ended = value), (error: Error) => (ended = error));
  while (!reached()) {
    if (ended) throw new Error(`the call ended first: ${ended instanceof Error ? ended.message : ended.ok ? "images" : `${ended.kind}, ${ended.detail}`}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

async function dimensions(outcome: UpstreamOutcome) {
  if (!outcome.ok) throw new Error(`expected images, got ${outcome.kind}: ${outcome.detail}`);
  return Promise.all(outcome.images.map(async (png) => {
    const meta = await sharp(png).metadata();
    return [meta.format, meta.width, meta.height];
  }));
}

describe.each(CASES)("$label", (c) => {
  it("delivers a PNG of exactly the requested size, sending the key the provider's way", async () => {
    const sim = sims.get(c.provider)!;
    const outcome = await run(c, "a lighthouse at dusk", { width: 1536, height: 1024 });
    expect(await dimensions(outcome)).toEqual([["png", 1536, 1024]]);
    expect(sim.stats.requests).toBeGreaterThan(0);
  });

  it("resizes an image delivered at another size to the requested one (cover, centred)", async () => {
    const outcome = await run(c, "a wide field [sim:size=800x600]", { width: 1024, height: 1024 });
    expect(await dimensions(outcome)).toEqual([["png", 1024, 1024]]);
    if (outcome.ok) expect(outcome.resized).toBe(1);
  });

  it("makes n images, in parallel calls where the provider makes one per call", async () => {
    const outcome = await run(c, "three birds", { n: 3, width: 512, height: 512 });
    expect(await dimensions(outcome)).toEqual([["png", 512, 512], ["png", 512, 512], ["png", 512, 512]]);
  });

  it("reports a content-policy refusal as refused", async () => {
    const outcome = await run(c, "something forbidden [sim:refuse]");
    expect(outcome).toMatchObject({ ok: false, kind: "refused", message: REFUSED_MESSAGE });
  });

  it("reports an upstream failure as failed", async () => {
    const outcome = await run(c, "a cat [sim:fail]");
    expect(outcome).toMatchObject({ ok: false, kind: "failed", message: FAILED_MESSAGE });
  });

  it("reports a malformed answer as failed", async () => {
    const outcome = await run(c, "a dog [sim:malformed]");
    expect(outcome).toMatchObject({ ok: false, kind: "failed" });
  });

  it("gives up on a hung upstream when the job's time runs out (the abort is rethrown)", async () => {
    const signal = AbortSignal.timeout(400);
    await expect(run(c, "a hung call [sim:hang]", { signal })).rejects.toThrow();
    expect(signal.aborted).toBe(true);
  });

  it("treats a channel's own timeout as a failure, so the job can fail over", async () => {
    const outcome = await run(c, "slow [sim:hang]", { extra: { timeoutMs: 300 } });
    expect(outcome).toMatchObject({ ok: false, kind: "failed" });
  });

  it("stops the channel's clock while the answer waits for its place in the answer gate: the wait is the gateway's", async () => {
    const prompt = "a patient lighthouse";
    await warmed(c, prompt);
    const gate = new AnswerGate({ answers: 1, bytes: 256 * 1024 * 1024 });
    const holder = gate.pass();
    await holder.admit(UNGATED_ANSWER_BYTES);
    const waiting = gate.pass();
    const outcome = run(c, prompt, { extra: { timeoutMs: CHANNEL_LIMIT_MS }, answers: waiting });
    await beforeTheEnd(() => gate.waiting > 0, outcome);
    // Longer than the channel's limit in line, then the place: the answer is delivered, not failed as a timeout.
    await new Promise((resolve) => setTimeout(resolve, IN_LINE_MS));
    holder.release();
    expect(await dimensions(await outcome)).toEqual([["png", 1024, 1024]]);
    waiting.release();
  });

  it("stops the channel's clock while the call's reads are held back (HOLD_BACK_AT answers in line): its answer is there, unread", async () => {
    const gate = new AnswerGate({ answers: 1, bytes: 256 * 1024 * 1024 });
    const holder = gate.pass();
    await holder.admit(UNGATED_ANSWER_BYTES);
    const line = Array.from({ length: HOLD_BACK_AT }, () => {
      const controller = new AbortController();
      gate.enter(UNGATED_ANSWER_BYTES, controller.signal).catch(() => undefined);
      return controller;
    });
    const place = gate.pass();
    const prompt = "a lighthouse kept waiting";
    await warmed(c, prompt);
    let finished = false;
    const outcome = run(c, prompt, { extra: { timeoutMs: CHANNEL_LIMIT_MS }, answers: place }).finally(() => (finished = true));
    // Longer than the channel's limit: the answer came, but nothing read it, and the call is not timed out.
    await new Promise((resolve) => setTimeout(resolve, IN_LINE_MS));
    expect(finished).toBe(false);
    line.forEach((controller) => controller.abort());
    holder.release();
    expect(await dimensions(await outcome)).toEqual([["png", 1024, 1024]]);
    place.release();
  });

});

describe("the answer gate and a job's own parallel calls", () => {
  // A job of n=2 on a channel of one image per call makes two calls that share its place. An
  // openai-compatible upstream over real HTTP answers the first at once and the second 300 ms later,
  // both large enough (40 kB) to need a place.
  let server: Server;
  let baseUrl = "";
  beforeAll(async () => {
    const png = (await sharp({ create: { width: 64, height: 64, channels: 3, background: "#336699" } }).png().toBuffer()).toString("base64");
    let calls = 0;
    server = createServer((request, response) => {
      request.resume();
      request.on("end", () => {
        const delayMs = calls++ === 0 ? 0 : 300;
        setTimeout(() => response.setHeader("content-type", "application/json").end(JSON.stringify({ created: 1, data: [{ b64_json: png }], padding: "x".repeat(40_000) })), delayMs);
      });
    });
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  });
  afterAll(() => server?.close());

  it("does not hold back the second call of a job that holds its place while HOLD_BACK_AT answers wait: the place would wait on itself", async () => {
    const catalog = parseCatalog({
      models: [
        {
          id: "beta",
          family: "beta",
          tiers: ["1K", "2K", "4K"],
          channels: [{ name: "one", provider: "openai-compatible", upstreamModel: "m", baseUrl, apiKeyEnv: "K", capacity: 4, maxImagesPerCall: 1, timeoutMs: 1000 }],
        },
      ],
    });
    const gate = new AnswerGate({ answers: 1, bytes: 256 * 1024 * 1024 });
    const place = gate.pass();
    const request = { prompt: "two boats", width: 64, height: 64, n: 2, quality: undefined };
    const outcome = generateOnChannel(catalog.get("beta")!.channels[0]!, API_KEY, request, AbortSignal.timeout(60_000), settings, place);
    // The first answer took the only place; other jobs' answers line up behind it.
    await beforeTheEnd(() => gate.held.answers > 0, outcome);
    const line = Array.from({ length: HOLD_BACK_AT }, () => {
      const controller = new AbortController();
      gate.enter(20_000, controller.signal).catch(() => undefined);
      return controller;
    });
    // Held back, the second answer was never read and the job never ended (its channel's clock stood still too).
    const inTime = await Promise.race([outcome.then(() => true), new Promise((resolve) => setTimeout(() => resolve(false), 5_000))]);
    line.forEach((controller) => controller.abort());
    place.release();
    expect(inTime).toBe(true);
    expect(await dimensions(await outcome)).toEqual([
      ["png", 64, 64],
      ["png", 64, 64],
    ]);
  });
});

describe.each(CASES.filter((c) => c.polled))("$label, polled", (c) => {
  it("keeps polling a slow job until it is ready", async () => {
    const sim = sims.get(c.provider)!;
    const polls = sim.count("poll");
    const outcome = await run(c, "patience [sim:slow-poll]");
    expect(await dimensions(outcome)).toEqual([["png", 1024, 1024]]);
    expect(sim.count("poll") - polls).toBeGreaterThanOrEqual(6);
  });
});

describe("credentials", () => {
  it("fails (not refuses) when the upstream rejects the key", async () => {
    const c = CASES[0]!;
    const outcome = await generateOnChannel(channelFor(c), "sk-wrong", { prompt: "x", width: 1024, height: 1024, n: 1, quality: undefined }, AbortSignal.timeout(10_000), settings);
    expect(outcome).toMatchObject({ ok: false, kind: "failed" });
    expect(outcome.ok ? "" : outcome.detail).toMatch(/401|invalid api key/i);
  });
});

describe("quality", () => {
  it("passes an alpha model's quality to OpenAI", async () => {
    const sim = sims.get("openai")!;
    await generateOnChannel(channelFor(CASES[0]!), API_KEY, { prompt: "q", width: 1024, height: 1024, n: 1, quality: "high" }, AbortSignal.timeout(10_000), settings);
    expect(sim.stats.lastBody).toMatchObject({ model: "gpt-image-1", quality: "high", size: "1024x1024", n: 1 });
  });
});

describe("image edits", () => {
  const solid = (r: number, g: number, b: number) => sharp({ create: { width: 64, height: 64, channels: 3, background: { r, g, b } } }).png().toBuffer();
  const mask = () => sharp({ create: { width: 64, height: 64, channels: 4, background: { r: 0, g: 0, b: 0, alpha: 0 } } }).png().toBuffer();
  const editing = CASES.filter((c) => editSupport(c).images);

  it("knows which providers edit: all of them", () => {
    expect(CASES.filter((c) => !editSupport(c).images).map((c) => c.label)).toEqual([]);
  });

  it.each(editing)("$label: sends the input images (and a mask where it takes one) the provider's way and delivers the requested size", async (c) => {
    const sim = sims.get(c.provider)!;
    sim.reset();
    sim.behave({ apiKey: API_KEY });
    const support = editSupport(c);
    const images = await Promise.all([solid(200, 20, 20), solid(20, 20, 200)].slice(0, Math.min(2, support.maxImages)));
    const edit = { images, ...(support.mask && { mask: await mask() }) };
    const outcome = await generateOnChannel(channelFor(c), API_KEY, { prompt: "make it blue", width: 768, height: 512, n: 1, quality: undefined, edit }, AbortSignal.timeout(30_000), settings);
    expect(await dimensions(outcome)).toEqual([["png", 768, 512]]);
    expect(sim.stats.lastInputs).toEqual({ images: images.length, mask: support.mask });
    if (c.provider === "openai" || c.provider === "openai-compatible") {
      expect(sim.count("edit")).toBe(1);
      expect(sim.count("generate")).toBe(0);
      expect(sim.stats.lastBody).toMatchObject({ model: c.upstreamModel, prompt: "make it blue", images: images.length, mask: support.mask });
    }
  });

  it("reports OpenAI's refusal of an edit as refused and its failure as failed", async () => {
    const c = CASES[0]!;
    const edit = { images: [await solid(1, 2, 3)] };
    const request = (prompt: string) => ({ prompt, width: 1024, height: 1024, n: 1, quality: undefined, edit });
    expect(await generateOnChannel(channelFor(c), API_KEY, request("x [sim:refuse]"), AbortSignal.timeout(10_000), settings)).toMatchObject({ ok: false, kind: "refused" });
    expect(await generateOnChannel(channelFor(c), API_KEY, request("x [sim:fail]"), AbortSignal.timeout(10_000), settings)).toMatchObject({ ok: false, kind: "failed" });
  });
});

describe.each(CASES)("$label, through the answer gate (answer-gate.ts)", (c) => {
  it("keeps a second job's image answer unread while the first job holds the only place, then delivers it", async () => {
    const gate = new AnswerGate({ answers: 1, bytes: 256 * 1024 * 1024 });
    const first = gate.pass();
    expect(await dimensions(await run(c, "the first lighthouse", { answers: first }))).toEqual([["png", 1024, 1024]]);
    // Its image (a 36-kB PNG, more as base64) took the place; a polled provider's status answers did not.
    expect(gate.held.answers).toBe(1);
    const second = gate.pass();
    let done = false;
    const secondRun = run(c, "the second lighthouse", { answers: second }).finally(() => (done = true));
    await beforeTheEnd(() => gate.waiting > 0, secondRun);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(done).toBe(false);
    first.release();
    expect(await dimensions(await secondRun)).toEqual([["png", 1024, 1024]]);
    second.release();
    expect(gate.held).toEqual({ answers: 0, bytes: 0 });
  });
});
