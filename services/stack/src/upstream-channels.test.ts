import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import OpenAI, { toFile } from "openai";
import sharp from "sharp";
import { AuthService, BillingService, GenerationService } from "@orvado/proto";
import { internalClient } from "@orvado/rpc";
import { startSimulator, type Simulator } from "@orvado/simulators";
import { startTestStack, type TestStack } from "./harness.ts";

// Issue D end to end: the whole stack with a models file whose channels are protocol
// simulators on 127.0.0.1 — failover inside one job and one charge, 503 when every
// channel is full, a refusal answered 502 without retry and without charge, and channel
// health in /v1/models once a circuit breaker opens. The services run in this process but
// call each other over HTTP/2 (ORVADO_RPC_TRANSPORT=http2), as separate processes do, and so
// do this file's own clients.

let stack: TestStack;
let auth: ReturnType<typeof internalClient<typeof AuthService>>;
let billing: ReturnType<typeof internalClient<typeof BillingService>>;
let primary: Simulator; // OpenAI, first by priority for alpha-2.5-flare
let secondary: Simulator; // Google Gemini, the fallback
let slow: Simulator; // fal, the only channel of beta, capacity 1
let seedream: Simulator; // ByteDance, first channel of beta-2.1
let spare: Simulator; // Replicate, second channel of beta-2.1
let modelsDir: string;

const ALPHA_FLARE_1K_MICROS = 40_000n; // config/prices.json
const KEYS = { SIM_OPENAI_KEY: "sk-openai-test", SIM_GOOGLE_KEY: "google-test", SIM_FAL_KEY: "fal-test", SIM_ARK_KEY: "ark-test", SIM_REPLICATE_KEY: "r8-test" };

function modelsFile(): string {
  const models = {
    models: [
      {
        id: "alpha-2.5-flare",
        family: "alpha",
        tiers: ["1K", "2K"],
        edits: true,
        channels: [
          { name: "gemini-backup", provider: "google", upstreamModel: "gemini-2.5-flash-image", baseUrl: secondary.baseUrl, apiKeyEnv: "SIM_GOOGLE_KEY", priority: 20, capacity: 8 },
          { name: "openai-main", provider: "openai", upstreamModel: "gpt-image-1", baseUrl: primary.baseUrl, apiKeyEnv: "SIM_OPENAI_KEY", priority: 10, capacity: 8 },
        ],
      },
      {
        id: "beta",
        family: "beta",
        tiers: ["1K"],
        channels: [{ name: "fal-only", provider: "fal", upstreamModel: "fal-ai/flux/dev", baseUrl: slow.baseUrl, apiKeyEnv: "SIM_FAL_KEY", capacity: 1 }],
      },
      {
        id: "beta-2.1",
        family: "beta",
        tiers: ["1K"],
        channels: [
          { name: "seedream", provider: "bytedance", upstreamModel: "seedream-4-0-250828", baseUrl: seedream.baseUrl, apiKeyEnv: "SIM_ARK_KEY", capacity: 4 },
          { name: "replicate", provider: "replicate", upstreamModel: "black-forest-labs/flux-schnell", baseUrl: spare.baseUrl, apiKeyEnv: "SIM_REPLICATE_KEY", capacity: 4, pollIntervalMs: 20 },
        ],
      },
    ],
  };
  const path = join(modelsDir, "models.json");
  writeFileSync(path, JSON.stringify(models));
  return path;
}

async function newFundedKey(usd: bigint): Promise<{ accountId: string; key: string }> {
  const { account } = await auth.createAccount({ email: `up-${Math.random().toString(36).slice(2)}@example.test`, password: "correct horse battery" });
  if (usd > 0n) await billing.topUp({ accountId: account!.accountId, amountMicros: usd * 1_000_000n, note: "test" });
  const created = await auth.createKey({ accountId: account!.accountId, name: "test" });
  return { accountId: account!.accountId, key: created.secret };
}

// biome-ignore lint/suspicious/noExplicitAny: the test reads fields of a JSON answer whose shape it asserts
const json = (response: Response): Promise<any> => response.json();

const balanceOf = async (accountId: string) => (await billing.getBalance({ accountId })).balance!;

// biome-ignore lint/suspicious/noExplicitAny: the test reads fields of a JSON answer whose shape it asserts
async function settledCost(requestId: string): Promise<any> {
  for (let attempt = 0; attempt < 400; attempt += 1) {
    const body = await json(await fetch(`${stack.edgeUrl}/api/cost/request/${requestId}`));
    if (body.status !== "pending") return body;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`cost of ${requestId} stayed pending`);
}

const generate = (key: string, body: Record<string, unknown>) =>
  fetch(`${stack.edgeUrl}/v1/images/generations`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
    body: JSON.stringify(body),
  });

async function until(condition: () => boolean): Promise<void> {
  for (let attempt = 0; attempt < 400 && !condition(); attempt += 1) await new Promise((resolve) => setTimeout(resolve, 10));
  expect(condition()).toBe(true);
}

beforeAll(async () => {
  const keyFor = (variable: keyof typeof KEYS) => ({ behaviour: { apiKey: KEYS[variable] } });
  primary = await startSimulator("openai", keyFor("SIM_OPENAI_KEY"));
  secondary = await startSimulator("google", keyFor("SIM_GOOGLE_KEY"));
  slow = await startSimulator("fal", keyFor("SIM_FAL_KEY"));
  seedream = await startSimulator("bytedance", keyFor("SIM_ARK_KEY"));
  spare = await startSimulator("replicate", keyFor("SIM_REPLICATE_KEY"));
  modelsDir = mkdtempSync(join(tmpdir(), "orvado-models-"));
  stack = await startTestStack({
    ...KEYS,
    ORVADO_MODELS_FILE: modelsFile(),
    // The simulators' result URLs are on 127.0.0.1: this test opts in explicitly.
    GENERATION_ALLOW_PRIVATE_UPSTREAMS: "1",
    GENERATION_BREAKER_FAILURES: "3",
    GENERATION_BREAKER_COOLDOWN_MS: "600000",
    // Short, so the hung-upstream test ends quickly; long enough for every other job here.
    GENERATION_JOB_TIMEOUT_MS: "4000",
    ORVADO_RPC_TRANSPORT: "http2",
  });
  auth = internalClient(AuthService, stack.authUrl, stack.internalSecret, { transport: "http2" });
  billing = internalClient(BillingService, stack.billingUrl, stack.internalSecret, { transport: "http2" });
});
afterAll(async () => {
  await stack?.close();
  await Promise.all([primary, secondary, slow, seedream, spare].map((sim) => sim?.close()));
  rmSync(modelsDir, { recursive: true, force: true });
});
beforeEach(() => {
  for (const sim of [primary, secondary, slow, seedream, spare]) sim.reset();
});

describe("upstream channels through the whole stack", () => {
  it("fails over from a failing channel to the next by priority, in one job with exactly one charge", async () => {
    primary.behave({ mode: "fail", failStatus: 500 });
    const { accountId, key } = await newFundedKey(5n);
    const sdk = new OpenAI({ apiKey: key, baseURL: `${stack.edgeUrl}/v1`, maxRetries: 0 });
    const { data: result, response } = await sdk.images
      .generate({ model: "alpha-2.5-flare", prompt: "a red kite over the sea", size: "1536x1024", quality: "high", response_format: "b64_json" })
      .withResponse();
    expect(primary.count("generate")).toBe(1);
    expect(secondary.count("generate")).toBe(1);
    const meta = await sharp(Buffer.from(result.data![0]!.b64_json!, "base64")).metadata();
    expect([meta.format, meta.width, meta.height]).toEqual(["png", 1536, 1024]);

    const requestId = response.headers.get("x-gateway-request-id")!;
    const cost = await settledCost(requestId);
    expect(cost).toMatchObject({ request_id: requestId, status: "charged", model: "alpha-2.5-flare", tier: "1K", amount_micros: 40000, images_delivered: 1 });
    const balance = await balanceOf(accountId);
    expect([balance.balanceMicros, balance.heldMicros]).toEqual([5_000_000n - ALPHA_FLARE_1K_MICROS, 0n]);
    const job = await stack.db.query<{ channel: string; status: string }>("SELECT channel, status FROM generation.jobs WHERE request_id = $1", [requestId]);
    expect(job.rows[0]).toEqual({ channel: "gemini-backup", status: "succeeded" });
  });

  it("asks the primary channel first when it is healthy, passing the alpha quality through", async () => {
    const { key } = await newFundedKey(1n);
    const response = await generate(key, { model: "alpha-2.5-flare", prompt: "a quiet harbour", quality: "low", response_format: "b64_json" });
    expect(response.status).toBe(200);
    expect([primary.count("generate"), secondary.count("generate")]).toEqual([1, 0]);
    expect(primary.stats.lastBody).toMatchObject({ model: "gpt-image-1", quality: "low", size: "1024x1024" });
  });

  it("runs image edits on the same channels: failover with the image to Gemini, a masked edit never sent to Gemini, one charge each", async () => {
    const { accountId, key } = await newFundedKey(5n);
    const sdk = new OpenAI({ apiKey: key, baseURL: `${stack.edgeUrl}/v1`, maxRetries: 0 });
    const png = await sharp({ create: { width: 64, height: 64, channels: 4, background: { r: 200, g: 10, b: 10, alpha: 1 } } }).png().toBuffer();
    const mask = await sharp({ create: { width: 64, height: 64, channels: 4, background: { r: 0, g: 0, b: 0, alpha: 0 } } }).png().toBuffer();
    const image = () => toFile(png, "in.png", { type: "image/png" });
    const maskFile = () => toFile(mask, "mask.png", { type: "image/png" });

    primary.behave({ mode: "fail", failStatus: 500 });
    // Gemini takes no mask: with OpenAI failing, a masked edit has nowhere else to go.
    const masked = await sdk.images.edit({ model: "alpha-2.5-flare", image: await image(), mask: await maskFile(), prompt: "fill it" }).then(() => null, (error: unknown) => error as InstanceType<typeof OpenAI.APIError>);
    expect([masked?.status, (masked?.error as { code?: string })?.code]).toEqual([502, "async_image_failed"]);
    expect([primary.count("edit"), secondary.count("generate")]).toEqual([1, 0]);

    const { data: result, response } = await sdk.images.edit({ model: "alpha-2.5-flare", image: await image(), prompt: "make it blue", response_format: "b64_json" }).withResponse();
    expect(primary.count("edit")).toBe(2);
    expect(secondary.stats.lastInputs).toEqual({ images: 1, mask: false });
    const meta = await sharp(Buffer.from(result.data![0]!.b64_json!, "base64")).metadata();
    expect([meta.format, meta.width, meta.height]).toEqual(["png", 1024, 1024]);
    const requestId = response.headers.get("x-gateway-request-id")!;
    expect(await settledCost(requestId)).toMatchObject({ status: "charged", model: "alpha-2.5-flare", tier: "1K", amount_micros: 40000, images_delivered: 1 });

    primary.behave({ mode: "ok" });
    const inpainted = await sdk.images.edit({ model: "alpha-2.5-flare", image: await image(), mask: await maskFile(), prompt: "fill it", size: "1024x1024" }).withResponse();
    await settledCost(inpainted.response.headers.get("x-gateway-request-id")!);
    expect(primary.stats.lastInputs).toEqual({ images: 1, mask: true });
    expect(primary.stats.lastBody).toMatchObject({ model: "gpt-image-1", prompt: "fill it", size: "1024x1024", images: 1, mask: true });
    const balance = await balanceOf(accountId);
    expect([balance.balanceMicros, balance.heldMicros]).toEqual([5_000_000n - 2n * ALPHA_FLARE_1K_MICROS, 0n]);
  });

  it("leaves no job and no channel slot behind when billing refuses the hold of a job on an upstream channel", async () => {
    const { accountId, key } = await newFundedKey(0n);
    // Twice: had the first refusal kept beta's one slot, the second would be refused for capacity (503), not for money.
    for (let attempt = 0; attempt < 2; attempt += 1) {
      const response = await generate(key, { model: "beta", prompt: "a painting nobody pays for", response_format: "b64_json" });
      expect(response.status).toBe(403);
      expect((await json(response)).error.code).toBe("insufficient_user_quota");
    }
    expect(slow.count("generate")).toBe(0);
    expect((await stack.db.query("SELECT 1 FROM generation.jobs WHERE account_id = $1", [accountId])).rowCount).toBe(0);
    expect((await stack.db.query("SELECT 1 FROM generation.channel_slots WHERE channel_key = 'beta/fal-only'")).rowCount).toBe(0);
    // beta's only channel has room for one: the slot came back, so a paying job runs.
    const paying = await newFundedKey(5n);
    expect((await generate(paying.key, { model: "beta", prompt: "a painting", response_format: "b64_json" })).status).toBe(200);
  });

  it("answers 503 no_capacity with Retry-After: 60 when every channel of the model is full, charging nothing", async () => {
    const { accountId, key } = await newFundedKey(5n);
    const first = generate(key, { model: "beta", prompt: "a slow painting [sim:delay=1500]", response_format: "b64_json" });
    await until(() => slow.count("generate") === 1);
    const second = await generate(key, { model: "beta", prompt: "another one", response_format: "b64_json" });
    expect(second.status).toBe(503);
    expect(second.headers.get("retry-after")).toBe("60");
    const body = await json(second);
    expect(body.error).toMatchObject({ type: "gateway_error", code: "no_capacity" });
    const secondId = second.headers.get("x-gateway-request-id")!;
    expect((await fetch(`${stack.edgeUrl}/api/cost/request/${secondId}`)).status).toBe(404);
    const answered = await first;
    expect(answered.status).toBe(200);
    expect(slow.count("generate")).toBe(1);
    expect(await settledCost(answered.headers.get("x-gateway-request-id")!)).toMatchObject({ status: "charged", amount_micros: 20000 });
    expect((await balanceOf(accountId)).balanceMicros).toBe(5_000_000n - 20_000n);
  });

  it("answers 503, asking no upstream and storing and charging nothing, when the job's row cannot be written", async () => {
    const { accountId, key } = await newFundedKey(5n);
    // A job's row is written as it starts, before its upstream is asked; here the database refuses it.
    await stack.db.query(`CREATE FUNCTION generation.refuse_test_jobs() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.account_id = '${accountId}' THEN RAISE EXCEPTION 'job rows refused by the test'; END IF; RETURN NEW; END $$`);
    await stack.db.query("CREATE TRIGGER refuse_test_jobs BEFORE INSERT ON generation.jobs FOR EACH ROW EXECUTE FUNCTION generation.refuse_test_jobs()");
    try {
      const imagesBefore = (await stack.db.query("SELECT 1 FROM generation.images")).rowCount;
      const response = await generate(key, { model: "alpha-2.5-flare", prompt: "a lighthouse at dusk", response_format: "b64_json" });
      expect(response.status).toBe(503);
      expect(response.headers.get("retry-after")).toBe("5");
      expect((await json(response)).error).toMatchObject({ type: "gateway_error", code: "service_unavailable" });
      // A job that could never be recorded is not run, on any channel.
      primary.behave({ mode: "fail", failStatus: 500 });
      expect((await generate(key, { model: "alpha-2.5-flare", prompt: "a second lighthouse" })).status).toBe(503);
      expect((await generate(key, { model: "beta-2.1", prompt: "a hung call [sim:hang]" })).status).toBe(503);
      expect([primary.count("generate"), secondary.count("generate"), seedream.count("generate")]).toEqual([0, 0, 0]);

      // No image, no job, no charge: the images are recorded with the job's outcome and its event.
      expect((await stack.db.query("SELECT 1 FROM generation.images")).rowCount).toBe(imagesBefore);
      expect((await stack.db.query("SELECT 1 FROM generation.jobs WHERE account_id = $1", [accountId])).rowCount).toBe(0);
      expect((await balanceOf(accountId)).balanceMicros).toBe(5_000_000n);
    } finally {
      await stack.db.query("DROP TRIGGER refuse_test_jobs ON generation.jobs");
      await stack.db.query("DROP FUNCTION generation.refuse_test_jobs()");
    }
  });

  it("answers a refusal with 502 async_image_failed and x-should-retry: false, without trying another channel or charging", async () => {
    const { accountId, key } = await newFundedKey(5n);
    const response = await generate(key, { model: "beta-2.1", prompt: "something not allowed [sim:refuse]" });
    expect(response.status).toBe(502);
    expect(response.headers.get("x-should-retry")).toBe("false");
    const body = await json(response);
    const requestId = response.headers.get("x-gateway-request-id")!;
    expect(body.error).toMatchObject({ type: "gateway_error", code: "async_image_failed" });
    expect(body.error.message).toMatch(/refused/);
    expect(body.error.message.endsWith(`(request id: ${requestId})`)).toBe(true);
    expect([seedream.count("generate"), spare.count("submit")]).toEqual([1, 0]);
    expect(await settledCost(requestId)).toMatchObject({ status: "not_charged", amount_usd: "0.000000" });
    const balance = await balanceOf(accountId);
    expect([balance.balanceMicros, balance.heldMicros]).toEqual([5_000_000n, 0n]);
  });

  it("answers 502 retryable, charging nothing, when every channel fails", async () => {
    seedream.behave({ mode: "fail" });
    spare.behave({ mode: "fail" });
    const { accountId, key } = await newFundedKey(5n);
    const response = await generate(key, { model: "beta-2.1", prompt: "a mountain" });
    expect(response.status).toBe(502);
    expect(response.headers.get("x-should-retry")).toBe("true");
    expect([seedream.count("generate"), spare.count("submit")]).toEqual([1, 1]);
    expect(await settledCost(response.headers.get("x-gateway-request-id")!)).toMatchObject({ status: "not_charged" });
    expect((await balanceOf(accountId)).balanceMicros).toBe(5_000_000n);
  });

  it("gives up on a hung upstream at the job's time limit: 502 retryable, no failover, nothing charged", async () => {
    const { accountId, key } = await newFundedKey(5n);
    const response = await generate(key, { model: "beta-2.1", prompt: "a hung call [sim:hang]" });
    expect(response.status).toBe(502);
    expect(response.headers.get("x-should-retry")).toBe("true");
    expect((await json(response)).error.message).toMatch(/did not finish within 4 seconds/);
    expect([seedream.count("generate"), spare.count("submit")]).toEqual([1, 0]);
    expect(await settledCost(response.headers.get("x-gateway-request-id")!)).toMatchObject({ status: "not_charged" });
    expect((await balanceOf(accountId)).balanceMicros).toBe(5_000_000n);
  });

  it("opens a channel's breaker after repeated failures: it is skipped and shown unhealthy in /v1/models", async () => {
    primary.behave({ mode: "fail" });
    const { key } = await newFundedKey(5n);
    // GENERATION_BREAKER_FAILURES is 3: three failures in a row open it (each request still succeeds on the backup).
    for (let i = 0; i < 3; i += 1) expect((await generate(key, { model: "alpha-2.5-flare", prompt: `try ${i}`, response_format: "b64_json" })).status).toBe(200);
    const models = await json(await fetch(`${stack.edgeUrl}/v1/models`, { headers: { authorization: `Bearer ${key}` } }));
    const flare = models.data.find((model: { id: string }) => model.id === "alpha-2.5-flare");
    expect(flare.channels).toEqual([
      { name: "openai-main", provider: "openai", healthy: false },
      { name: "gemini-backup", provider: "google", healthy: true },
    ]);
    const generation = internalClient(GenerationService, stack.generationUrl, stack.internalSecret, { transport: "http2" });
    const listed = (await generation.listModels({})).models.find((model) => model.id === "alpha-2.5-flare")!;
    expect(listed.channels.map(({ name, healthy, state, inUse, capacity, priority }) => ({ name, healthy, state, inUse, capacity, priority }))).toEqual([
      { name: "openai-main", healthy: false, state: "open", inUse: 0, capacity: 8, priority: 10 },
      { name: "gemini-backup", healthy: true, state: "closed", inUse: 0, capacity: 8, priority: 20 },
    ]);
    const failedCalls = primary.count("generate");
    expect((await generate(key, { model: "alpha-2.5-flare", prompt: "skip the broken one", response_format: "b64_json" })).status).toBe(200);
    expect(primary.count("generate")).toBe(failedCalls);
  });
});
