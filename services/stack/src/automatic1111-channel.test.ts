import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import OpenAI, { toFile } from "openai";
import { pino } from "pino";
import sharp from "sharp";
import { AuthService, BillingService } from "@orvado/proto";
import { internalClient } from "@orvado/rpc";
import { startSimulator, type Simulator } from "@orvado/simulators";
import { startTestStack, type TestStack } from "./harness.ts";

// A model on an automatic1111 channel end to end: the official openai SDK against the
// edge over HTTP, the services calling each other over HTTP/2, generation calling the
// A1111 protocol simulator over HTTP on 127.0.0.1 (txt2img, img2img with a mask),
// billing charging from the event stream. The server's own error message
// reaches the operator's log.

const KEY = "artist:brush";
const BETA_1K_MICROS = 20_000n; // config/prices.json: beta 1K = $0.02

let stack: TestStack;
let gpu: Simulator;
let auth: ReturnType<typeof internalClient<typeof AuthService>>;
let billing: ReturnType<typeof internalClient<typeof BillingService>>;
let modelsDir: string;
const logLines: Array<{ msg: string; detail?: string; channel?: string }> = [];

function modelsFile(): string {
  const models = {
    models: [
      {
        id: "beta",
        family: "beta",
        tiers: ["1K"],
        edits: true,
        channels: [{ name: "gpu-box", provider: "automatic1111", baseUrl: gpu.baseUrl, apiKeyEnv: "SIM_A1111_AUTH", capacity: 1, steps: 8, pollIntervalMs: 50 }],
      },
    ],
  };
  const path = join(modelsDir, "models.json");
  writeFileSync(path, JSON.stringify(models));
  return path;
}

async function newFundedKey(usd: bigint): Promise<{ accountId: string; key: string }> {
  const { account } = await auth.createAccount({ email: `a1111-${Math.random().toString(36).slice(2)}@example.test`, password: "correct horse battery" });
  await billing.topUp({ accountId: account!.accountId, amountMicros: usd * 1_000_000n, note: "test" });
  const created = await auth.createKey({ accountId: account!.accountId, name: "test" });
  return { accountId: account!.accountId, key: created.secret };
}

// biome-ignore lint/suspicious/noExplicitAny: the test reads fields of a JSON answer whose shape it asserts
const json = (response: Response): Promise<any> => response.json();

async function settledCost(requestId: string) {
  for (let attempt = 0; attempt < 400; attempt += 1) {
    const body = await json(await fetch(`${stack.edgeUrl}/api/cost/request/${requestId}`));
    if (body.status !== "pending") return body;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`cost of ${requestId} stayed pending`);
}

const balanceOf = async (accountId: string) => (await billing.getBalance({ accountId })).balance!;
const sdk = (key: string) => new OpenAI({ apiKey: key, baseURL: `${stack.edgeUrl}/v1`, maxRetries: 0 });
const sizeOf = async (base64: string) => {
  const meta = await sharp(Buffer.from(base64, "base64")).metadata();
  return [meta.format, meta.width, meta.height];
};

beforeAll(async () => {
  gpu = await startSimulator("automatic1111", { behaviour: { apiKey: KEY } });
  modelsDir = mkdtempSync(join(tmpdir(), "orvado-a1111-"));
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const text of chunk.toString().split("\n").filter(Boolean)) logLines.push(JSON.parse(text));
      done();
    },
  });
  stack = await startTestStack(
    { SIM_A1111_AUTH: KEY, ORVADO_MODELS_FILE: modelsFile(), GENERATION_BREAKER_FAILURES: "50", ORVADO_RPC_TRANSPORT: "http2" },
    { logger: pino({ level: "info" }, sink) },
  );
  auth = internalClient(AuthService, stack.authUrl, stack.internalSecret, { transport: "http2" });
  billing = internalClient(BillingService, stack.billingUrl, stack.internalSecret, { transport: "http2" });
});
afterAll(async () => {
  await stack?.close();
  await gpu?.close();
  rmSync(modelsDir, { recursive: true, force: true });
});
beforeEach(() => {
  gpu.reset();
  gpu.behave({ apiKey: KEY });
});

describe("an automatic1111 channel through the whole stack", () => {
  it("answers an image of the requested size and charges once", async () => {
    const { accountId, key } = await newFundedKey(5n);
    const { data: result, response } = await sdk(key)
      .images.generate({ model: "beta", prompt: "a red kite over the sea [sim:delay=400]", size: "1536x1024", response_format: "b64_json" })
      .withResponse();
    expect(await sizeOf(result.data![0]!.b64_json!)).toEqual(["png", 1536, 1024]);
    expect(gpu.received("txt2img").at(-1)!.body).toMatchObject({ prompt: "a red kite over the sea [sim:delay=400]", width: 1536, height: 1024, steps: 8, batch_size: 1 });
    expect(gpu.count("txt2img")).toBe(1);
    const requestId = response.headers.get("x-gateway-request-id")!;
    expect(await settledCost(requestId)).toMatchObject({ status: "charged", model: "beta", tier: "1K", amount_micros: Number(BETA_1K_MICROS), images_delivered: 1 });
    const balance = await balanceOf(accountId);
    expect([balance.balanceMicros, balance.heldMicros]).toEqual([5_000_000n - BETA_1K_MICROS, 0n]);
  });

  it("runs an edit with a mask through img2img, the mask turned white where OpenAI's was transparent, and charges once", async () => {
    const { accountId, key } = await newFundedKey(5n);
    const image = await sharp({ create: { width: 64, height: 64, channels: 3, background: "#c81414" } }).png().toBuffer();
    const mask = await sharp({ create: { width: 64, height: 64, channels: 4, background: { r: 0, g: 0, b: 0, alpha: 0 } } }).png().toBuffer();
    const { data: result, response } = await sdk(key)
      .images.edit({
        model: "beta",
        image: await toFile(image, "in.png", { type: "image/png" }),
        mask: await toFile(mask, "mask.png", { type: "image/png" }),
        prompt: "fill it with sky",
        size: "1024x1024",
        response_format: "b64_json",
      })
      .withResponse();
    expect(await sizeOf(result.data![0]!.b64_json!)).toEqual(["png", 1024, 1024]);
    expect(gpu.stats.lastInputs).toEqual({ images: 1, mask: true });
    const sent = gpu.received("img2img").at(-1)!.body as { init_images: string[]; mask: string };
    expect(sent.init_images).toEqual([image.toString("base64")]);
    const converted = await sharp(Buffer.from(sent.mask, "base64")).extractChannel(0).raw().toBuffer();
    expect(converted.every((value) => value === 255)).toBe(true);
    expect(await settledCost(response.headers.get("x-gateway-request-id")!)).toMatchObject({ status: "charged", amount_micros: Number(BETA_1K_MICROS) });
    expect((await balanceOf(accountId)).balanceMicros).toBe(5_000_000n - BETA_1K_MICROS);
  });

  it("answers 502 async_image_failed, charging nothing, when the server fails, with its message in the operator's log", async () => {
    const { accountId, key } = await newFundedKey(5n);
    const response = await fetch(`${stack.edgeUrl}/v1/images/generations`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
      body: JSON.stringify({ model: "beta", prompt: "too big for the card [sim:fail]" }),
    });
    expect(response.status).toBe(502);
    expect((await json(response)).error).toMatchObject({ type: "gateway_error", code: "async_image_failed" });
    expect(gpu.count("txt2img")).toBe(1);
    expect(await settledCost(response.headers.get("x-gateway-request-id")!)).toMatchObject({ status: "not_charged" });
    const balance = await balanceOf(accountId);
    expect([balance.balanceMicros, balance.heldMicros]).toEqual([5_000_000n, 0n]);
    expect(logLines.some((line) => line.channel === "gpu-box" && line.detail?.includes("A1111: CUDA out of memory"))).toBe(true);
  });
});
