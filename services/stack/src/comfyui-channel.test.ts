import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { Writable } from "node:stream";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pino } from "pino";
import sharp from "sharp";
import { AuthService, BillingService } from "@orvado/proto";
import { internalClient } from "@orvado/rpc";
import { startSimulator, type Simulator } from "@orvado/simulators";
import { startTestStack, type TestStack } from "./harness.ts";

// A model served by one's own GPU box: a comfyui channel whose workflow file sits beside
// the models file, pointed at the ComfyUI protocol simulator (HTTP and its websocket on
// 127.0.0.1, allowed by the channel's allowPrivateNetwork, not the service-wide switch).
// Clients call the edge over HTTP; the services call each other over HTTP/2.

const BETA_1K_MICROS = 20_000n; // config/prices.json
const STOCK_WORKFLOW = fileURLToPath(new URL("../../../config/comfyui/text-to-image.json", import.meta.url));

let stack: TestStack;
let comfy: Simulator;
let modelsDir: string;
let auth: ReturnType<typeof internalClient<typeof AuthService>>;
let billing: ReturnType<typeof internalClient<typeof BillingService>>;
const logLines: { msg: string; detail?: string; channel?: string }[] = [];

function modelsFile(): string {
  mkdirSync(join(modelsDir, "comfyui"));
  copyFileSync(STOCK_WORKFLOW, join(modelsDir, "comfyui", "text-to-image.json"));
  const models = {
    models: [
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
  comfy = await startSimulator("comfyui", { behaviour: { steps: 3 } });
  modelsDir = mkdtempSync(join(tmpdir(), "orvado-comfyui-models-"));
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const text of chunk.toString().split("\n").filter(Boolean)) logLines.push(JSON.parse(text));
      done();
    },
  });
  stack = await startTestStack({ ORVADO_MODELS_FILE: modelsFile(), ORVADO_RPC_TRANSPORT: "http2" }, { logger: pino({ level: "info" }, sink) });
  auth = internalClient(AuthService, stack.authUrl, stack.internalSecret, { transport: "http2" });
  billing = internalClient(BillingService, stack.billingUrl, stack.internalSecret, { transport: "http2" });
});
afterAll(async () => {
  await stack?.close();
  await comfy?.close();
  rmSync(modelsDir, { recursive: true, force: true });
});

async function newFundedKey(): Promise<{ accountId: string; key: string }> {
  const { account } = await auth.createAccount({ email: `comfy-${Math.random().toString(36).slice(2)}@example.test`, password: "correct horse battery" });
  await billing.topUp({ accountId: account!.accountId, amountMicros: 5_000_000n, note: "test" });
  const created = await auth.createKey({ accountId: account!.accountId, name: "test" });
  return { accountId: account!.accountId, key: created.secret };
}

const generate = (key: string, body: Record<string, unknown>) =>
  fetch(`${stack.edgeUrl}/v1/images/generations`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
    body: JSON.stringify({ model: "beta", response_format: "b64_json", ...body }),
  });

// biome-ignore lint/suspicious/noExplicitAny: the test reads fields of a JSON answer whose shape it asserts
async function settledCost(requestId: string): Promise<any> {
  for (let attempt = 0; attempt < 400; attempt += 1) {
    const body = (await (await fetch(`${stack.edgeUrl}/api/cost/request/${requestId}`)).json()) as { status: string };
    if (body.status !== "pending") return body;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`cost of ${requestId} stayed pending`);
}

const balanceOf = async (accountId: string) => (await billing.getBalance({ accountId })).balance!;

describe("a comfyui channel through the whole stack (HTTP edge, HTTP/2 services, ComfyUI simulator over HTTP + websocket)", () => {
  it("answers an image of the requested size from the workflow, charged once", async () => {
    const { accountId, key } = await newFundedKey();
    const response = await generate(key, { prompt: "a lighthouse at dusk", size: "768x512" });
    expect(response.status).toBe(200);
    const body = (await response.json()) as { data: { b64_json: string }[] };
    const meta = await sharp(Buffer.from(body.data[0]!.b64_json, "base64")).metadata();
    expect([meta.format, meta.width, meta.height]).toEqual(["png", 768, 512]);
    expect(comfy.stats.lastWorkflow!["6"]!.inputs.text).toBe("a lighthouse at dusk");
    expect([comfy.count("prompt"), comfy.count("ws")]).toEqual([1, 1]);

    const requestId = response.headers.get("x-gateway-request-id")!;
    expect(await settledCost(requestId)).toMatchObject({ status: "charged", model: "beta", tier: "1K", amount_micros: Number(BETA_1K_MICROS), images_delivered: 1 });
    const balance = await balanceOf(accountId);
    expect([balance.balanceMicros, balance.heldMicros]).toEqual([5_000_000n - BETA_1K_MICROS, 0n]);
    const job = await stack.db.query<{ channel: string; status: string }>("SELECT channel, status FROM generation.jobs WHERE request_id = $1", [requestId]);
    expect(job.rows[0]).toEqual({ channel: "gpu-box", status: "succeeded" });
  });

  it("answers 502 async_image_failed when the workflow fails on a node, charges nothing, and logs the node's message", async () => {
    const { accountId, key } = await newFundedKey();
    const response = await generate(key, { prompt: "a storm [sim:fail]" });
    expect(response.status).toBe(502);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe("async_image_failed");
    const requestId = response.headers.get("x-gateway-request-id")!;
    expect(await settledCost(requestId)).toMatchObject({ status: "not_charged" });
    const balance = await balanceOf(accountId);
    expect([balance.balanceMicros, balance.heldMicros]).toEqual([5_000_000n, 0n]);
    const failure = logLines.find((line) => line.msg === "upstream failed; trying the next channel" && line.channel === "gpu-box");
    expect(failure?.detail).toContain("ComfyUI node 3 (KSampler): Allocation on device would exceed allowed memory. (out of memory)");
  });
});
