import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import OpenAI from "openai";
import sharp from "sharp";
import { AuthService, BillingService } from "@orvado/proto";
import { internalClient } from "@orvado/rpc";
import { startE2eStack, type E2eStack } from "./e2e-stack.ts";
import { openApiViolations, validatingFetch } from "./openapi-validation.ts";

// Issue A's acceptance, end to end: the official openai SDK against the edge, real
// PostgreSQL when TEST_DATABASE_URL is set. Between the services: in-process calls in
// the "embedded" project (one process), Connect over HTTP/2 in the "kafka" project
// (separate processes, e2e-stack.ts).

// Every response this suite receives is checked against the OpenAPI document (openapi-validation.ts).
const fetch = validatingFetch();
afterEach(() => {
  expect(openApiViolations.splice(0)).toEqual([]);
});

let stack: E2eStack;
let auth: ReturnType<typeof internalClient<typeof AuthService>>;
let billing: ReturnType<typeof internalClient<typeof BillingService>>;

const BETA_1K_MICROS = 20_000n; // config/prices.json: beta 1K = $0.02
const REQUEST_ID = /^req_[A-Za-z0-9_-]{22}$/;

async function newFundedKey(usd: bigint): Promise<{ accountId: string; key: string }> {
  const email = `user-${Math.random().toString(36).slice(2)}@example.test`;
  const { account } = await auth.createAccount({ email, password: "correct horse battery" });
  if (usd > 0n) await billing.topUp({ accountId: account!.accountId, amountMicros: usd * 1_000_000n, note: "test" });
  const created = await auth.createKey({ accountId: account!.accountId, name: "test" });
  return { accountId: account!.accountId, key: created.secret };
}

const available = async (accountId: string) => (await billing.getBalance({ accountId })).balance!.availableMicros;

async function settledCost(requestId: string) {
  for (let attempt = 0; attempt < 200; attempt += 1) {
    const response = await fetch(`${stack.edgeUrl}/api/cost/request/${requestId}`);
    const body = await json(response);
    if (body.status !== "pending") return body;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`cost of ${requestId} stayed pending`);
}

// biome-ignore lint/suspicious/noExplicitAny: the test reads fields of a JSON answer whose shape it asserts
const json = (response: Response): Promise<any> => response.json();

const sdk = (apiKey: string) => new OpenAI({ apiKey, baseURL: `${stack.edgeUrl}/v1`, maxRetries: 0, fetch });

const post = (body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${stack.edgeUrl}/v1/images/generations`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });

beforeAll(async () => {
  stack = await startE2eStack();
  auth = internalClient(AuthService, stack.authUrl, stack.internalSecret);
  billing = internalClient(BillingService, stack.billingUrl, stack.internalSecret);
});
afterAll(async () => {
  await stack?.close();
});

describe("the bare address", () => {
  it("sends a browser to the console and answers API clients with a 404 in the error shape", async () => {
    const browser = await fetch(`${stack.edgeUrl}/`, { headers: { accept: "text/html,application/xhtml+xml" }, redirect: "manual" });
    expect(browser.status).toBe(302);
    expect(browser.headers.get("location")).toBe("/console");
    const api = await fetch(`${stack.edgeUrl}/`);
    expect(api.status).toBe(404);
    expect(((await api.json()) as { error: { code: string } }).error.code).toBe("not_found");
  });
});

describe("the generation path", () => {
  it("generates a url image of the requested size and charges exactly the listed price", async () => {
    const { accountId, key } = await newFundedKey(5n);
    const before = await available(accountId);
    const { data: result, response } = await sdk(key)
      .images.generate({ model: "beta", prompt: "a red fox in the snow", size: "1536x1024" })
      .withResponse();
    const requestId = response.headers.get("x-gateway-request-id")!;
    expect(requestId).toMatch(REQUEST_ID);
    expect(response.headers.get("x-request-id")).toBe(requestId);
    expect(result.data).toHaveLength(1);
    const url = result.data![0]!.url!;
    expect(url.startsWith(`${stack.edgeUrl}/v1/files/`)).toBe(true);
    expect(result.data![0]!.b64_json).toBeUndefined();
    const download = await fetch(url);
    expect(download.status).toBe(200);
    expect(download.headers.get("content-type")).toBe("image/png");
    const meta = await sharp(Buffer.from(await download.arrayBuffer())).metadata();
    expect([meta.format, meta.width, meta.height]).toEqual(["png", 1536, 1024]);

    const cost = await settledCost(requestId);
    expect(cost).toMatchObject({ request_id: requestId, status: "charged", model: "beta", size: "1536x1024", tier: "1K", amount_usd: "0.020000", amount_micros: 20000, images_delivered: 1 });
    expect(await available(accountId)).toBe(before - BETA_1K_MICROS);
    const balance = (await billing.getBalance({ accountId })).balance!;
    expect(balance.balanceMicros).toBe(5_000_000n - BETA_1K_MICROS);
    expect(balance.heldMicros).toBe(0n);
  });

  it("returns b64_json instead of url when asked, and charges again", async () => {
    const { accountId, key } = await newFundedKey(5n);
    const { data: result, response } = await sdk(key)
      .images.generate({ model: "beta", prompt: "a lighthouse", response_format: "b64_json" })
      .withResponse();
    expect(result.data![0]!.url).toBeUndefined();
    const meta = await sharp(Buffer.from(result.data![0]!.b64_json!, "base64")).metadata();
    expect([meta.width, meta.height]).toEqual([1024, 1024]);
    expect((await settledCost(response.headers.get("x-gateway-request-id")!)).status).toBe("charged");
    expect(await available(accountId)).toBe(5_000_000n - BETA_1K_MICROS);
  });

  it("charges the 2K price for a 2K size", async () => {
    const { accountId, key } = await newFundedKey(5n);
    const { response } = await sdk(key).images.generate({ model: "beta-2.1", prompt: "a wide valley", size: "2k", response_format: "b64_json" }).withResponse();
    const cost = await settledCost(response.headers.get("x-gateway-request-id")!);
    expect(cost).toMatchObject({ tier: "2K", amount_usd: "0.060000" });
    expect(await available(accountId)).toBe(5_000_000n - 60_000n);
  });

  it("answers a refusal with 502 async_image_failed, not retryable, and charges nothing", async () => {
    const { accountId, key } = await newFundedKey(5n);
    const response = await post({ model: "beta", prompt: "a cat [sandbox:refuse]" }, { authorization: `Bearer ${key}` });
    expect(response.status).toBe(502);
    expect(response.headers.get("x-should-retry")).toBe("false");
    const body = await json(response);
    const requestId = response.headers.get("x-gateway-request-id")!;
    expect(body.error).toMatchObject({ type: "gateway_error", code: "async_image_failed" });
    expect(body.error.message.endsWith(`(request id: ${requestId})`)).toBe(true);
    const cost = await settledCost(requestId);
    expect(cost).toMatchObject({ status: "not_charged", amount_usd: "0.000000" });
    expect(await available(accountId)).toBe(5_000_000n);
  });

  it("answers a failed job with 502 async_image_failed through the SDK, charging nothing", async () => {
    const { accountId, key } = await newFundedKey(5n);
    const error = await sdk(key).images.generate({ model: "beta", prompt: "[sandbox:fail] a dog" }).catch((caught) => caught);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect(error.status).toBe(502);
    expect(error.code).toBe("async_image_failed");
    const cost = await settledCost(error.headers.get("x-gateway-request-id"));
    expect(cost.status).toBe("not_charged");
    expect(await available(accountId)).toBe(5_000_000n);
  });

  it("refuses a key with no balance with 403 insufficient_user_quota and holds nothing", async () => {
    const { accountId, key } = await newFundedKey(0n);
    const error = await sdk(key).images.generate({ model: "beta", prompt: "a bird" }).catch((caught) => caught);
    expect(error.status).toBe(403);
    expect(error.code).toBe("insufficient_user_quota");
    expect(error.error.type).toBe("gateway_error");
    const balance = (await billing.getBalance({ accountId })).balance!;
    expect([balance.balanceMicros, balance.heldMicros]).toEqual([0n, 0n]);
  });

  it("refuses a request with no key with 401 saying no token was provided", async () => {
    const response = await post({ model: "beta", prompt: "x" });
    expect(response.status).toBe(401);
    const body = await json(response);
    expect(body.error.type).toBe("gateway_error");
    expect(body.error.code).toBe("missing_api_key");
    expect(body.error.message).toMatch(/no token was provided/i);
    expect(response.headers.get("x-gateway-request-id")).toMatch(REQUEST_ID);
  });

  it("refuses malformed and unknown keys with 401", async () => {
    for (const authorization of ["Bearer td-short", "Bearer sk-abc", "Basic dXNlcjpwYXNz", `Bearer td-${"A".repeat(43)}`]) {
      const response = await post({ model: "beta", prompt: "x" }, { authorization });
      expect(response.status, authorization).toBe(401);
      expect((await json(response)).error.code).toBe("invalid_api_key");
    }
  });

  it("checks the key before the body: a bad body without a key is 401", async () => {
    expect((await post({ prompt: "no model" })).status).toBe(401);
  });

  it("validates the request with 400s in the documented error shape", async () => {
    const { key } = await newFundedKey(1n);
    const cases: Array<[unknown, string]> = [
      [{ prompt: "x" }, "missing_field"],
      [{ model: "beta" }, "missing_field"],
      [{ model: "gamma-9", prompt: "x" }, "unknown_model"],
      [{ model: "beta", prompt: "x", size: "0x0" }, "invalid_size"],
      [{ model: "beta", prompt: "x", size: "99999x1" }, "invalid_size"],
      [{ model: "beta", prompt: "x", style: "vivid" }, "unknown_field"],
      [{ model: "beta", prompt: "x", n: 99 }, "invalid_field"],
      [{ model: "beta", prompt: "x", quality: "ultra" }, "invalid_field"],
      [{ model: "beta", prompt: "x", response_format: "png" }, "invalid_field"],
      [{ model: "beta-2-lite", prompt: "x", size: "2048x2048" }, "tier_not_offered"],
      ["{not json", "invalid_json"],
    ];
    for (const [body, code] of cases) {
      const response = await post(body, { authorization: `Bearer ${key}` });
      const answer = await json(response);
      expect([response.status, answer.error.code], JSON.stringify(body)).toEqual([400, code]);
      expect(answer.error.type).toBe("gateway_error");
      expect(answer.error.message).toMatch(/\(request id: req_[A-Za-z0-9_-]{22}\)$/);
    }
    const tier = await json(await post({ model: "beta-2-lite", prompt: "x", size: "4k" }, { authorization: `Bearer ${key}` }));
    expect(tier.error.message).toContain("4K");
  });

  it("accepts quality for beta models without changing the price", async () => {
    const { accountId, key } = await newFundedKey(1n);
    await sdk(key).images.generate({ model: "beta", prompt: "x", quality: "high", response_format: "b64_json" });
    expect(await available(accountId)).toBe(1_000_000n - BETA_1K_MICROS);
  });

  it("lists the six model ids, labelled as sandbox", async () => {
    const { key } = await newFundedKey(0n);
    const models = await sdk(key).models.list();
    const ids = models.data.map((model) => model.id).sort();
    expect(ids).toEqual(["alpha-2.5-flare", "alpha-2.5-sunburst", "beta", "beta-2-lite", "beta-2.1", "beta-pro"]);
    expect(models.data.every((model) => model.owned_by === "orvado-sandbox")).toBe(true);
  });

  it("answers unknown routes, unknown costs and keyless edits in the documented error shape with a request id", async () => {
    const missingRoute = await fetch(`${stack.edgeUrl}/v1/nothing-here`);
    expect(missingRoute.status).toBe(404);
    expect((await json(missingRoute)).error).toMatchObject({ type: "gateway_error", code: "not_found" });
    expect(missingRoute.headers.get("x-gateway-request-id")).toMatch(REQUEST_ID);
    const unknownCost = await fetch(`${stack.edgeUrl}/api/cost/request/req_AAAAAAAAAAAAAAAAAAAAAA`);
    expect(unknownCost.status).toBe(404);
    expect((await json(unknownCost)).error.code).toBe("not_found");
    // Edits have their own suite (image-edits.test.ts); without a key they are refused like generations.
    const edits = await fetch(`${stack.edgeUrl}/v1/images/edits`, { method: "POST" });
    expect(edits.status).toBe(401);
    expect((await json(edits)).error.code).toBe("missing_api_key");
  });

  it("refuses tampered and unknown image links", async () => {
    const { key } = await newFundedKey(1n);
    const result = await sdk(key).images.generate({ model: "beta", prompt: "x" });
    const url = new URL(result.data![0]!.url!);
    url.searchParams.set("sig", "AAAA" + url.searchParams.get("sig")!.slice(4));
    expect((await fetch(url)).status).toBe(404);
    const expired = new URL(result.data![0]!.url!);
    expired.searchParams.set("expires", "1");
    expect((await fetch(expired)).status).toBe(404);
  });
});

describe("capacity", () => {
  it("gives the channel slot back when billing refuses, so refusals never starve a model", async () => {
    const small = await startE2eStack({ ORVADO_MODELS_FILE: writeModels(1) });
    try {
      const smallAuth = internalClient(AuthService, small.authUrl, small.internalSecret);
      const smallBilling = internalClient(BillingService, small.billingUrl, small.internalSecret);
      const { account } = await smallAuth.createAccount({ email: "cap@example.test", password: "long enough pw" });
      const { secret } = await smallAuth.createKey({ accountId: account!.accountId, name: "t" });
      const ask = () =>
        fetch(`${small.edgeUrl}/v1/images/generations`, {
          method: "POST",
          headers: { "content-type": "application/json", authorization: `Bearer ${secret}` },
          body: JSON.stringify({ model: "beta", prompt: "x", response_format: "b64_json" }),
        });
      for (let i = 0; i < 3; i += 1) expect((await ask()).status).toBe(403);
      await smallBilling.topUp({ accountId: account!.accountId, amountMicros: 1_000_000n, note: "t" });
      expect((await ask()).status).toBe(200);
    } finally {
      await small.close();
    }
  });

  it("answers 503 no_capacity with Retry-After: 60 when every channel is full, charging nothing", async () => {
    const small = await startE2eStack({ ORVADO_MODELS_FILE: writeModels(1) });
    try {
      const smallAuth = internalClient(AuthService, small.authUrl, small.internalSecret);
      const smallBilling = internalClient(BillingService, small.billingUrl, small.internalSecret);
      const { account } = await smallAuth.createAccount({ email: "full@example.test", password: "long enough pw" });
      await smallBilling.topUp({ accountId: account!.accountId, amountMicros: 1_000_000n, note: "t" });
      const { secret } = await smallAuth.createKey({ accountId: account!.accountId, name: "t" });
      const ask = (prompt: string) =>
        fetch(`${small.edgeUrl}/v1/images/generations`, {
          method: "POST",
          headers: { "content-type": "application/json", authorization: `Bearer ${secret}` },
          body: JSON.stringify({ model: "beta", prompt, response_format: "b64_json" }),
        });
      const slow = ask("[sandbox:delay=4000] slow");
      // The slow job holds the only slot once its row exists (written as it starts).
      while (!(await jobStarted(small, account!.accountId))) await new Promise((resolve) => setTimeout(resolve, 10));
      const full = await ask("second");
      expect(full.status).toBe(503);
      expect(full.headers.get("retry-after")).toBe("60");
      expect((await json(full)).error.code).toBe("no_capacity");
      expect((await slow).status).toBe(200);
      // Settlement arrives by event, so wait for the hold to become a charge; the 503 must add nothing.
      let balance = (await smallBilling.getBalance({ accountId: account!.accountId })).balance!;
      for (let attempt = 0; balance.heldMicros > 0n && attempt < 400; attempt++) {
        await new Promise((resolve) => setTimeout(resolve, 25));
        balance = (await smallBilling.getBalance({ accountId: account!.accountId })).balance!;
      }
      expect(balance).toMatchObject({ balanceMicros: 1_000_000n - BETA_1K_MICROS, heldMicros: 0n });
    } finally {
      await small.close();
    }
  });
});

// docs/api.md#job-lookup: between its billing hold and its row a job has no row; the lookup then
// answers from the request's open hold (edge routes/jobs.ts). The test keeps the job in that step by
// locking generation.jobs against writes (PostgreSQL, over the stack's own pool).
describe("the request lookup of a job that has no row yet", () => {
  it("answers 202 running from the open hold, then the result once the job has ended", async () => {
    const stack = await startE2eStack();
    try {
      const auth = internalClient(AuthService, stack.authUrl, stack.internalSecret);
      const billing = internalClient(BillingService, stack.billingUrl, stack.internalSecret);
      const { account } = await auth.createAccount({ email: "early@example.test", password: "long enough pw" });
      await billing.topUp({ accountId: account!.accountId, amountMicros: 1_000_000n, note: "t" });
      const { secret } = await auth.createKey({ accountId: account!.accountId, name: "t" });
      const { account: other } = await auth.createAccount({ email: "other-early@example.test", password: "long enough pw" });
      const { secret: otherKey } = await auth.createKey({ accountId: other!.accountId, name: "t" });
      let answer!: Promise<Response>;
      let requestId: string | undefined;
      const lookUp = (key: string) => fetch(`${stack.edgeUrl}/v1/images/generations/${requestId}`, { headers: { authorization: `Bearer ${key}` } });
      await stack.db.tx(async (q) => {
        // An INSERT waits for a SHARE lock: the job has its hold, and its row waits until this transaction ends.
        await q.query("LOCK TABLE generation.jobs IN SHARE MODE");
        answer = fetch(`${stack.edgeUrl}/v1/images/generations`, {
          method: "POST",
          headers: { "content-type": "application/json", authorization: `Bearer ${secret}` },
          body: JSON.stringify({ model: "beta", prompt: "[sandbox:delay=500] looked up early" }),
        });
        // The client has the id only with the answer; the test reads it from the hold.
        while (!requestId) {
          const { rows } = await stack.db.query<{ request_id: string }>("SELECT request_id FROM billing.cost_records WHERE account_id = $1", [account!.accountId]);
          requestId = rows[0]?.request_id;
          if (!requestId) await new Promise((resolve) => setTimeout(resolve, 10));
        }
        const early = await lookUp(secret);
        expect(early.status).toBe(202);
        expect(early.headers.get("retry-after")).toBe("5");
        expect(await json(early)).toMatchObject({ id: requestId, object: "image.generation", status: "running" });
        expect(await jobStarted(stack, account!.accountId)).toBe(false);
        // Another account's key sees nothing, as for any request of another account.
        expect((await lookUp(otherKey)).status).toBe(404);
      });

      expect((await answer).status).toBe(200);
      const done = await lookUp(secret);
      expect(done.status).toBe(200);
      expect((await json(done)).data[0].url).toMatch(/^http/);
    } finally {
      await stack.close();
    }
  });
});

async function jobStarted(on: E2eStack, accountId: string): Promise<boolean> {
  const { rows } = await on.db.query("SELECT 1 FROM generation.jobs WHERE account_id = $1", [accountId]);
  return rows.length > 0;
}

function writeModels(capacity: number): string {
  const path = join(mkdtempSync(join(tmpdir(), "orvado-models-")), "models.json");
  const models = JSON.parse(readFileSync(new URL("../../../config/models.json", import.meta.url), "utf8"));
  for (const model of models.models) for (const channel of model.channels) channel.capacity = capacity;
  writeFileSync(path, JSON.stringify(models));
  return path;
}
