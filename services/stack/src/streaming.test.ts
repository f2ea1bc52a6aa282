import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import OpenAI, { APIError, toFile } from "openai";
import sharp from "sharp";
import { AuthService, BillingService } from "@orvado/proto";
import { internalClient } from "@orvado/rpc";

import { startE2eStack, type E2eStack } from "./e2e-stack.ts";
import { openApiViolations, validatingFetch } from "./openapi-validation.ts";

// Streaming (issue M item 1) and live progress in the job lookup (issue N item 3), end to
// end: the official openai SDK 7 iterating `stream: true` over real HTTP, real PostgreSQL
// when TEST_DATABASE_URL is set. Between the services: in-process calls in the "embedded"
// project (StreamImage handed over directly, libs/rpc/src/direct-stream.ts), Connect over HTTP/2 in the
// "kafka" project (separate processes, e2e-stack.ts). The sandbox makes the partial images.

const fetch = validatingFetch();
afterEach(() => {
  expect(openApiViolations.splice(0)).toEqual([]);
});

const HEARTBEAT_MS = 300;
/** The comment line the edge sends between events (services/edge/src/event-stream.ts). */
const HEARTBEAT = ": keep-alive\n\n";
const BETA_1K_MICROS = 20_000n;

let stack: E2eStack;
let auth: ReturnType<typeof internalClient<typeof AuthService>>;
let billing: ReturnType<typeof internalClient<typeof BillingService>>;

beforeAll(async () => {
  stack = await startE2eStack({ EDGE_STREAM_HEARTBEAT_MS: String(HEARTBEAT_MS) });
  auth = internalClient(AuthService, stack.authUrl, stack.internalSecret);
  billing = internalClient(BillingService, stack.billingUrl, stack.internalSecret);
});
afterAll(async () => {
  await stack?.close();
});

async function newFundedKey(usd: bigint): Promise<{ accountId: string; key: string }> {
  const email = `user-${Math.random().toString(36).slice(2)}@example.test`;
  const { account } = await auth.createAccount({ email, password: "correct horse battery" });
  if (usd > 0n) await billing.topUp({ accountId: account!.accountId, amountMicros: usd * 1_000_000n, note: "test" });
  const created = await auth.createKey({ accountId: account!.accountId, name: "test" });
  return { accountId: account!.accountId, key: created.secret };
}

const available = async (accountId: string) => (await billing.getBalance({ accountId })).balance!.availableMicros;
const sdk = (apiKey: string) => new OpenAI({ apiKey, baseURL: `${stack.edgeUrl}/v1`, maxRetries: 0, fetch });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// biome-ignore lint/suspicious/noExplicitAny: the tests read fields of JSON answers whose shape they assert
async function settledCost(requestId: string): Promise<any> {
  for (let attempt = 0; attempt < 400; attempt += 1) {
    // biome-ignore lint/suspicious/noExplicitAny: a JSON answer whose shape the callers assert
    const body: any = await (await fetch(`${stack.edgeUrl}/api/cost/request/${requestId}`)).json();
    if (body.status !== "pending" && body.error?.code !== "not_found") return body;
    await sleep(50);
  }
  throw new Error(`cost of ${requestId} stayed pending`);
}

/** A raw streamed POST (the SDK hides the headers): the response, its body read as text as it comes. */
async function postStream(key: string, body: Record<string, unknown>, signal?: AbortSignal) {
  return globalThis.fetch(`${stack.edgeUrl}/v1/images/generations`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ ...body, stream: true }),
    ...(signal && { signal }),
  });
}

describe("stream: true with the openai SDK (HTTP; in-process or HTTP/2 RPC by project)", () => {
  it("gives 2 partial images, then the completed image, and charges once", async () => {
    const { accountId, key } = await newFundedKey(1n);
    const before = await available(accountId);
    const { data: events, response } = await sdk(key)
      .images.generate({ model: "beta", prompt: "[sandbox:delay=600] a streamed fox", stream: true, partial_images: 2, size: "512x512" })
      .withResponse();
    expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const requestId = response.headers.get("x-request-id")!;
    expect(response.headers.get("x-gateway-request-id")).toBe(requestId);
    const seen = [];
    for await (const event of events) seen.push(event);
    expect(seen.map((event) => event.type)).toEqual(["image_generation.partial_image", "image_generation.partial_image", "image_generation.completed"]);
    expect(seen.slice(0, 2).map((event) => (event.type === "image_generation.partial_image" ? event.partial_image_index : -1))).toEqual([0, 1]);
    const completed = seen[2]!;
    expect(completed).toMatchObject({ size: "512x512", output_format: "png", quality: "auto", background: "auto", usage: { total_tokens: 0 } });
    expect(typeof completed.created_at).toBe("number");
    const image = await sharp(Buffer.from(completed.b64_json, "base64")).metadata();
    expect([image.format, image.width, image.height]).toEqual(["png", 512, 512]);
    // Each partial is a smaller render of the final image.
    const partial = await sharp(Buffer.from(seen[0]!.b64_json, "base64")).metadata();
    expect(partial.format).toBe("png");
    expect(partial.width).toBeLessThan(512);
    const cost = await settledCost(requestId);
    expect(cost).toMatchObject({ status: "charged", amount_micros: Number(BETA_1K_MICROS), images_delivered: 1 });
    expect(before - (await available(accountId))).toBe(BETA_1K_MICROS);
  });

  it("sends one completed event per image when n > 1, and no partials without partial_images", async () => {
    const { key } = await newFundedKey(1n);
    const events = await sdk(key).images.generate({ model: "beta", prompt: "two at once", stream: true, n: 2, size: "256x256", output_format: "webp" });
    const types = [];
    for await (const event of events) types.push([event.type, event.output_format]);
    expect(types).toEqual([
      ["image_generation.completed", "webp"],
      ["image_generation.completed", "webp"],
    ]);
  });

  it("streams an edit (multipart, stream and partial_images as form text)", async () => {
    const { key } = await newFundedKey(1n);
    const png = await sharp({ create: { width: 96, height: 64, channels: 3, background: { r: 200, g: 40, b: 30 } } }).png().toBuffer();
    const image = await toFile(png, "red.png", { type: "image/png" });
    // The SDK's multipart body goes through Node's own fetch: the validating wrapper reads requests, not form streams.
    const events = await new OpenAI({ apiKey: key, baseURL: `${stack.edgeUrl}/v1`, maxRetries: 0 }).images.edit({ model: "alpha-2.5-flare", image, prompt: "make it cyan", size: "96x64", stream: true, partial_images: 1 });
    const types = [];
    for await (const event of events) types.push(event.type);
    expect(types).toEqual(["image_edit.partial_image", "image_edit.completed"]);
  });

  it("raises an error that comes after the stream began as the SDK's APIError, and charges nothing", async () => {
    const { accountId, key } = await newFundedKey(1n);
    const before = await available(accountId);
    const { data: events, response } = await sdk(key).images.generate({ model: "beta", prompt: "[sandbox:fail] doomed", stream: true }).withResponse();
    expect(response.status).toBe(200);
    const caught = await (async () => {
      for await (const _event of events) {
        // no image event comes before the failure
      }
    })().catch((error: unknown) => error);
    expect(caught).toBeInstanceOf(APIError);
    expect((caught as APIError).code).toBe("async_image_failed");
    expect((caught as APIError).message).toContain(response.headers.get("x-request-id")!);
    expect((await settledCost(response.headers.get("x-request-id")!)).status).toBe("not_charged");
    expect(await available(accountId)).toBe(before);
  });

  it("answers a refusal before the job starts as an ordinary JSON error with its status", async () => {
    const { key } = await newFundedKey(0n);
    const broke = await postStream(key, { model: "beta", prompt: "no money" });
    expect(broke.status).toBe(403);
    expect(broke.headers.get("content-type")).toMatch(/^application\/json/);
    expect(((await broke.json()) as { error: { code: string } }).error.code).toBe("insufficient_user_quota");
    const bad = await postStream(key, { model: "beta", prompt: "x", partial_images: 4 });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { message: string } }).error.message).toMatch(/^partial_images must be an integer from 0 to 3/);
    const notBool = await globalThis.fetch(`${stack.edgeUrl}/v1/images/generations`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "beta", prompt: "x", stream: "yes" }),
    });
    expect(notBool.status).toBe(400);
    expect(((await notBool.json()) as { error: { code: string } }).error.code).toBe("invalid_field");
  });

  it("accepts partial_images without stream and answers as before (JSON)", async () => {
    const { key } = await newFundedKey(1n);
    const answer = await sdk(key).images.generate({ model: "beta", prompt: "plain", partial_images: 2, size: "256x256" });
    expect(answer.data?.[0]?.url).toMatch(/\/v1\/files\/img_/);
  });
});

describe("heartbeats, disconnects and idempotent retries of a stream (raw HTTP)", () => {
  it("sends a keep-alive comment line while a slow job has nothing to say", async () => {
    const { key } = await newFundedKey(1n);
    const response = await postStream(key, { model: "beta", prompt: "[sandbox:delay=1500] slow and quiet" });
    expect(response.headers.get("x-request-id")).toMatch(/^req_/);
    const text = await response.text();
    const beforeCompleted = text.slice(0, text.indexOf("event: image_generation.completed"));
    expect(beforeCompleted.split(HEARTBEAT).length - 1).toBeGreaterThanOrEqual(2);
    expect(text).toContain("event: image_generation.completed");
  });

  it("charges a job whose client left mid-stream when it completes", async () => {
    const { accountId, key } = await newFundedKey(1n);
    const before = await available(accountId);
    const leaving = new AbortController();
    const response = await postStream(key, { model: "beta", prompt: "[sandbox:delay=1500] left behind", partial_images: 1 }, leaving.signal);
    const requestId = response.headers.get("x-request-id")!;
    const reader = response.body!.getReader();
    await reader.read();
    leaving.abort();
    await reader.cancel().catch(() => {});
    const cost = await settledCost(requestId);
    expect(cost).toMatchObject({ status: "charged", images_delivered: 1 });
    expect(before - (await available(accountId))).toBe(BETA_1K_MICROS);
  });

  it("lets an Idempotency-Key retry attach to the running job: heartbeats, then the same completed image, charged once", async () => {
    const { accountId, key } = await newFundedKey(1n);
    const before = await available(accountId);
    const headers = { authorization: `Bearer ${key}`, "content-type": "application/json", "idempotency-key": `stream-${Math.random()}` };
    const body = JSON.stringify({ model: "beta", prompt: "[sandbox:delay=1500] once only", stream: true, size: "256x256" });
    const post = () => globalThis.fetch(`${stack.edgeUrl}/v1/images/generations`, { method: "POST", headers, body });
    const first = await post();
    const retry = await post();
    const originalId = first.headers.get("x-request-id")!;
    expect(retry.headers.get("x-request-id")).toBe(originalId);
    expect(retry.headers.get("idempotent-replayed")).toBe("true");
    const [firstText, retryText] = await Promise.all([first.text(), retry.text()]);
    expect(retryText).toContain(HEARTBEAT);
    const completed = (text: string) => JSON.parse(text.split("event: image_generation.completed\ndata: ")[1]!.split("\n")[0]!).b64_json;
    expect(completed(retryText)).toBe(completed(firstText));
    expect((await settledCost(originalId)).status).toBe("charged");
    expect(before - (await available(accountId))).toBe(BETA_1K_MICROS);
  });
});

describe("the job lookup while a job runs (HTTP; progress from PostgreSQL)", () => {
  it("shows rising progress and a link to the newest preview", async () => {
    const { key } = await newFundedKey(1n);
    const response = await postStream(key, { model: "beta", prompt: "[sandbox:delay=5000] watched", partial_images: 3, size: "512x512" });
    const requestId = response.headers.get("x-request-id")!;
    const done = response.text();
    const progress: number[] = [];
    let previewUrl: string | undefined;
    let previewWidth: number | undefined;
    for (;;) {
      const lookup = await fetch(`${stack.edgeUrl}/v1/images/generations/${requestId}`, { headers: { authorization: `Bearer ${key}` } });
      if (lookup.status !== 202) break;
      const body = (await lookup.json()) as { progress?: number; preview_url?: string };
      if (body.progress !== undefined) progress.push(body.progress);
      if (body.preview_url && !previewUrl) {
        // Fetched at once: a newer preview replaces it (and deletes it) within a second or so.
        previewUrl = body.preview_url;
        const preview = await fetch(previewUrl);
        expect(preview.status).toBe(200);
        previewWidth = (await sharp(Buffer.from(await preview.arrayBuffer())).metadata()).width;
      }
      await sleep(400);
    }
    await done;
    expect(progress.length).toBeGreaterThanOrEqual(2);
    expect(progress).toEqual([...progress].sort((a, b) => a - b));
    expect(progress.at(-1)!).toBeGreaterThan(progress[0]!);
    expect(progress.every((value) => value > 0 && value <= 1)).toBe(true);
    expect(previewUrl).toMatch(/\/v1\/files\/img_[A-Za-z0-9_-]+\.png\?expires=/);
    expect(previewWidth).toBeLessThan(512);
  });
});
