import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import OpenAI from "openai";
import { AuthService, BillingService } from "@orvado/proto";
import { internalClient } from "@orvado/rpc";
import { startSimulator, type Simulator } from "@orvado/simulators";
import { startTestStack, type TestStack } from "./harness.ts";

// Streaming and the lookup's progress with real upstream protocols (issue M item 1, issue
// N item 3): an `openai` channel on the OpenAI simulator, whose own streamed partial images
// become the stream's, and a `comfyui` channel on the ComfyUI simulator, whose websocket
// progress and binary previews become partial images and the lookup's progress. Clients
// call the edge over HTTP (the openai SDK 7); the services call each other over HTTP/2.

const OPENAI_KEY = "sk-sim-stream-test";
const STOCK_WORKFLOW = fileURLToPath(new URL("../../../config/comfyui/text-to-image.json", import.meta.url));

let stack: TestStack;
let openai: Simulator;
let comfy: Simulator;
let modelsDir: string;
let auth: ReturnType<typeof internalClient<typeof AuthService>>;
let billing: ReturnType<typeof internalClient<typeof BillingService>>;

function modelsFile(): string {
  mkdirSync(join(modelsDir, "comfyui"));
  copyFileSync(STOCK_WORKFLOW, join(modelsDir, "comfyui", "text-to-image.json"));
  const models = {
    models: [
      {
        id: "alpha-2.5-flare",
        family: "alpha",
        tiers: ["1K"],
        channels: [{ name: "openai-main", provider: "openai", upstreamModel: "gpt-image-1", baseUrl: openai.baseUrl, apiKeyEnv: "SIM_OPENAI_KEY", capacity: 4 }],
      },
      {
        id: "beta",
        family: "beta",
        tiers: ["1K"],
        channels: [{ name: "gpu-box", provider: "comfyui", baseUrl: comfy.baseUrl, workflow: "comfyui/text-to-image.json", capacity: 2, allowPrivateNetwork: true }],
      },
    ],
  };
  const path = join(modelsDir, "models.json");
  writeFileSync(path, JSON.stringify(models));
  return path;
}

beforeAll(async () => {
  openai = await startSimulator("openai", { behaviour: { apiKey: OPENAI_KEY } });
  comfy = await startSimulator("comfyui", { behaviour: { steps: 8 } });
  modelsDir = mkdtempSync(join(tmpdir(), "orvado-stream-models-"));
  stack = await startTestStack({
    SIM_OPENAI_KEY: OPENAI_KEY,
    ORVADO_MODELS_FILE: modelsFile(),
    // The simulators' addresses are on 127.0.0.1: this test opts in explicitly.
    GENERATION_ALLOW_PRIVATE_UPSTREAMS: "1",
    ORVADO_RPC_TRANSPORT: "http2",
  });
  auth = internalClient(AuthService, stack.authUrl, stack.internalSecret, { transport: "http2" });
  billing = internalClient(BillingService, stack.billingUrl, stack.internalSecret, { transport: "http2" });
});
afterAll(async () => {
  await stack?.close();
  await Promise.all([openai?.close(), comfy?.close()]);
  if (modelsDir) rmSync(modelsDir, { recursive: true, force: true });
});

async function client(): Promise<{ sdk: OpenAI; key: string }> {
  const { account } = await auth.createAccount({ email: `stream-up-${Math.random().toString(36).slice(2)}@example.test`, password: "correct horse battery" });
  await billing.topUp({ accountId: account!.accountId, amountMicros: 5_000_000n, note: "test" });
  const key = (await auth.createKey({ accountId: account!.accountId, name: "test" })).secret;
  return { sdk: new OpenAI({ apiKey: key, baseURL: `${stack.edgeUrl}/v1`, maxRetries: 0 }), key };
}

// biome-ignore lint/suspicious/noExplicitAny: the test reads fields of a JSON answer whose shape it asserts
async function settledCost(requestId: string): Promise<any> {
  for (let attempt = 0; attempt < 400; attempt += 1) {
    const body = (await (await fetch(`${stack.edgeUrl}/api/cost/request/${requestId}`)).json()) as { status: string };
    if (body.status !== "pending") return body;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`cost of ${requestId} stayed pending`);
}

describe("streams from upstreams that make previews (HTTP edge, HTTP/2 services, protocol simulators)", () => {
  it("passes an openai channel's own partial images on, then the completed image, charged once", async () => {
    const { sdk } = await client();
    const { data: events, response } = await sdk.images
      .generate({ model: "alpha-2.5-flare", prompt: "[sim:delay=600] a streamed heron", stream: true, partial_images: 2, size: "1024x1024" })
      .withResponse();
    const types = [];
    for await (const event of events) types.push(event.type);
    expect(types).toEqual(["image_generation.partial_image", "image_generation.partial_image", "image_generation.completed"]);
    expect(openai.stats.lastBody).toMatchObject({ stream: true, partial_images: 2 });
    expect(await settledCost(response.headers.get("x-request-id")!)).toMatchObject({ status: "charged", images_delivered: 1 });
  });

  it("turns a comfyui channel's previews into at most partial_images partial images, and shows its progress in the lookup", async () => {
    const { sdk, key } = await client();
    const { data: events, response } = await sdk.images
      .generate({ model: "beta", prompt: "[sim:delay=6000] a watched kiln", stream: true, partial_images: 3, size: "512x512" })
      .withResponse();
    const requestId = response.headers.get("x-request-id")!;
    const progress: number[] = [];
    let previewType: string | null | undefined;
    const watching = (async () => {
      for (;;) {
        const lookup = await fetch(`${stack.edgeUrl}/v1/images/generations/${requestId}`, { headers: { authorization: `Bearer ${key}` } });
        if (lookup.status !== 202) return;
        const body = (await lookup.json()) as { progress?: number; preview_url?: string };
        if (body.progress !== undefined) progress.push(body.progress);
        if (body.preview_url && !previewType) {
          // Fetched at once: a newer preview replaces it (and deletes it) within a second or so.
          previewType = (await fetch(body.preview_url)).headers.get("content-type");
        }
        await new Promise((resolve) => setTimeout(resolve, 300));
      }
    })();
    const seen = [];
    for await (const event of events) seen.push(event);
    await watching;
    const partials = seen.filter((event) => event.type === "image_generation.partial_image");
    expect(partials.map((event) => (event.type === "image_generation.partial_image" ? event.partial_image_index : -1))).toEqual([0, 1, 2]);
    expect(seen.at(-1)?.type).toBe("image_generation.completed");
    expect(progress.length).toBeGreaterThanOrEqual(2);
    expect(progress).toEqual([...progress].sort((a, b) => a - b));
    expect(progress.at(-1)!).toBeGreaterThan(progress[0]!);
    expect(previewType).toBe("image/jpeg");
    expect(await settledCost(requestId)).toMatchObject({ status: "charged" });
  });
});
