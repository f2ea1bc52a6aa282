import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import OpenAI from "openai";
import sharp from "sharp";
import { AuthService, BillingService } from "@orvado/proto";
import { internalClient } from "@orvado/rpc";
import { startE2eStack, type E2eStack } from "./e2e-stack.ts";
import { openApiViolations, validatingFetch } from "./openapi-validation.ts";

// Async submit (issue 56 item 2): `Prefer: respond-async` on POST /v1/images/generations and
// /v1/images/edits answers 202 once the job runs, and GET /v1/images/generations/<id> serves the
// result. Over real HTTP to the edge, the edge's SubmitImage call to generation in-process (the
// colocated transport) in the "embedded" project and over Connect on HTTP/2 to separate processes
// in "kafka", real PostgreSQL. Slow jobs use the sandbox's `[sandbox:delay=<ms>]` directive.

// Every response this suite receives is checked against the OpenAPI document (openapi-validation.ts).
const fetch = validatingFetch();
afterEach(() => {
  expect(openApiViolations.splice(0)).toEqual([]);
});

let stack: E2eStack;
let auth: ReturnType<typeof internalClient<typeof AuthService>>;
let billing: ReturnType<typeof internalClient<typeof BillingService>>;

const BETA_1K_MICROS = 20_000n; // config/prices.json: beta 1K = $0.02
const FLARE_1K_MICROS = 40_000n; // config/prices.json: alpha-2.5-flare 1K = $0.04
const FUNDS_MICROS = 5_000_000n;
const ASYNC = { prefer: "respond-async" };

// biome-ignore lint/suspicious/noExplicitAny: the test reads fields of a JSON answer whose shape it asserts
const json = (response: Response): Promise<any> => response.json();

async function newKey(funds = FUNDS_MICROS): Promise<{ accountId: string; key: string }> {
  const { account } = await auth.createAccount({ email: `async-${randomUUID()}@example.test`, password: "correct horse battery" });
  if (funds > 0n) await billing.topUp({ accountId: account!.accountId, amountMicros: funds, note: "test" });
  const created = await auth.createKey({ accountId: account!.accountId, name: "test" });
  return { accountId: account!.accountId, key: created.secret };
}

const post = (key: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${stack.edgeUrl}/v1/images/generations`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${key}`, ...headers },
    body: JSON.stringify(body),
  });

const lookup = (key: string, location: string) => fetch(`${stack.edgeUrl}${location}`, { headers: { authorization: `Bearer ${key}` } });

/** Polls the lookup until the job has ended; returns every status seen, and the last response. */
async function pollUntilEnded(key: string, location: string): Promise<{ statuses: number[]; last: Response }> {
  const statuses: number[] = [];
  for (let attempt = 0; attempt < 400; attempt += 1) {
    const response = await lookup(key, location);
    statuses.push(response.status);
    if (response.status !== 202) return { statuses, last: response };
    await response.body?.cancel();
    await sleep(100);
  }
  throw new Error(`${location} kept answering 202`);
}

/** Waits until billing has settled every hold of the account, then returns what it was charged in all. */
async function chargedOnceSettled(accountId: string): Promise<bigint> {
  for (let attempt = 0; attempt < 400; attempt += 1) {
    const balance = (await billing.getBalance({ accountId })).balance!;
    if (balance.heldMicros === 0n) return FUNDS_MICROS - balance.balanceMicros;
    await sleep(25);
  }
  throw new Error(`holds of ${accountId} never settled`);
}

async function jobIdsOf(accountId: string): Promise<string[]> {
  const { rows } = await stack.db.query<{ request_id: string }>("SELECT request_id FROM generation.jobs WHERE account_id = $1 ORDER BY created_at", [accountId]);
  return rows.map((row) => row.request_id);
}

/** The 202 of an async submit, checked field by field; returns the job's request id. */
async function expectAccepted(response: Response): Promise<string> {
  expect(response.status).toBe(202);
  const body = await json(response);
  const id = response.headers.get("x-gateway-request-id")!;
  expect(response.headers.get("x-request-id")).toBe(id);
  expect(response.headers.get("location")).toBe(`/v1/images/generations/${id}`);
  expect(response.headers.get("preference-applied")).toBe("respond-async");
  expect(response.headers.get("retry-after")).toBe("5");
  expect(body).toEqual({ id, object: "image.generation", status: "running", created: expect.any(Number) });
  expect(Math.abs(body.created - Date.now() / 1000)).toBeLessThan(60);
  return id;
}

beforeAll(async () => {
  stack = await startE2eStack();
  auth = internalClient(AuthService, stack.authUrl, stack.internalSecret);
  billing = internalClient(BillingService, stack.billingUrl, stack.internalSecret);
});
afterAll(async () => {
  await stack?.close();
});

describe(`Prefer: respond-async on a generation (${process.env.ORVADO_TEST_STREAM === "kafka" ? "Connect over HTTP/2" : "in-process"} to generation)`, () => {
  it("answers 202 with Location while the job runs; polling gives 202 running, then 200 with the image; charged once", async () => {
    const { accountId, key } = await newKey();
    const accepted = await post(key, { model: "beta", prompt: "a patient fox [sandbox:delay=3000]" }, ASYNC);
    const id = await expectAccepted(accepted);
    const { statuses, last } = await pollUntilEnded(key, accepted.headers.get("location")!);
    expect(statuses[0]).toBe(202);
    expect(last.status).toBe(200);
    const body = await json(last);
    expect(body.data).toHaveLength(1);
    const image = await fetch(body.data[0].url);
    expect(image.status).toBe(200);
    expect((await sharp(Buffer.from(await image.arrayBuffer())).metadata()).width).toBe(1024);
    expect(await chargedOnceSettled(accountId)).toBe(BETA_1K_MICROS);
    expect(await jobIdsOf(accountId)).toEqual([id]);
  });

  it("reads the preference among others, in any case, and ignores the ones it does not apply", async () => {
    const { key } = await newKey();
    const accepted = await post(key, { model: "beta", prompt: "a fox among preferences" }, { prefer: "return=minimal, Respond-Async; x=1, wait=10" });
    const id = await expectAccepted(accepted);
    const { last } = await pollUntilEnded(key, `/v1/images/generations/${id}`);
    expect(last.status).toBe(200);
  });

  it("answers a job the model refuses after its 202 with the failure in the lookup, charging nothing", async () => {
    const { accountId, key } = await newKey();
    const accepted = await post(key, { model: "beta", prompt: "refused later [sandbox:delay=500] [sandbox:refuse]" }, ASYNC);
    const id = await expectAccepted(accepted);
    const { last } = await pollUntilEnded(key, `/v1/images/generations/${id}`);
    expect(last.status).toBe(502);
    expect(last.headers.get("x-should-retry")).toBe("false");
    expect((await json(last)).error.code).toBe("async_image_failed");
    expect(await chargedOnceSettled(accountId)).toBe(0n);
  });

  it("refuses what a synchronous request would refuse, with its error and never 202", async () => {
    const { accountId, key } = await newKey();
    const unknownField = await post(key, { model: "beta", prompt: "a fox", colour: "red" }, ASYNC);
    expect(unknownField.status).toBe(400);
    expect(unknownField.headers.get("preference-applied")).toBeNull();
    expect((await json(unknownField)).error.code).toBe("unknown_field");
    const badSize = await post(key, { model: "beta", prompt: "a fox", size: "7x7" }, ASYNC);
    expect(badSize.status).toBe(400);
    expect((await json(badSize)).error.code).toBe("invalid_size");
    const noKey = await fetch(`${stack.edgeUrl}/v1/images/generations`, { method: "POST", headers: { "content-type": "application/json", ...ASYNC }, body: "{}" });
    expect(noKey.status).toBe(401);
    expect(await jobIdsOf(accountId)).toEqual([]);

    const broke = await newKey(0n);
    const unfunded = await post(broke.key, { model: "beta", prompt: "a fox on credit [sandbox:delay=3000]" }, ASYNC);
    expect(unfunded.status).toBe(403);
    expect(unfunded.headers.get("preference-applied")).toBeNull();
    expect((await json(unfunded)).error.code).toBe("insufficient_user_quota");
    expect(await jobIdsOf(broke.accountId)).toEqual([]);
  });
});

describe("an Idempotency-Key retry of an async submit", () => {
  it("answers 202 with the original id while the job runs, then the stored result; one job, charged once", async () => {
    const { accountId, key } = await newKey();
    const body = { model: "beta", prompt: "submitted twice [sandbox:delay=3000]" };
    const headers = { ...ASYNC, "idempotency-key": `async-${randomUUID()}` };
    const original = await expectAccepted(await post(key, body, headers));

    const retry = await post(key, body, headers);
    expect(retry.status).toBe(202);
    expect(retry.headers.get("idempotent-replayed")).toBe("true");
    expect(retry.headers.get("x-gateway-request-id")).toBe(original);
    expect(retry.headers.get("location")).toBe(`/v1/images/generations/${original}`);
    expect(await json(retry)).toMatchObject({ id: original, status: "running" });

    const { last } = await pollUntilEnded(key, `/v1/images/generations/${original}`);
    expect(last.status).toBe(200);
    const finished = await json(last);
    const afterEnd = await post(key, body, headers);
    expect(afterEnd.status).toBe(200);
    expect(afterEnd.headers.get("idempotent-replayed")).toBe("true");
    expect(afterEnd.headers.get("x-gateway-request-id")).toBe(original);
    expect((await json(afterEnd)).created).toBe(finished.created);
    expect(await chargedOnceSettled(accountId)).toBe(BETA_1K_MICROS);
    expect(await jobIdsOf(accountId)).toEqual([original]);
  });

  it("attaches a synchronous retry to the submitted job: it waits for it and gets its images", async () => {
    const { accountId, key } = await newKey();
    const body = { model: "beta", prompt: "submitted, then awaited [sandbox:delay=1500]" };
    const key1 = { "idempotency-key": `async-${randomUUID()}` };
    const original = await expectAccepted(await post(key, body, { ...ASYNC, ...key1 }));
    const awaited = await post(key, body, key1);
    expect(awaited.status).toBe(200);
    expect(awaited.headers.get("x-gateway-request-id")).toBe(original);
    expect((await json(awaited)).data).toHaveLength(1);
    expect(await chargedOnceSettled(accountId)).toBe(BETA_1K_MICROS);
  });
});

describe("Prefer: respond-async on an image edit (multipart)", () => {
  it("answers 202, then the lookup gives the edited image; charged once", async () => {
    const { accountId, key } = await newKey();
    const png = await sharp({ create: { width: 256, height: 256, channels: 3, background: { r: 200, g: 40, b: 40 } } }).png().toBuffer();
    const form = new FormData();
    form.append("model", "alpha-2.5-flare");
    form.append("prompt", "make it blue [sandbox:delay=2000]");
    form.append("image", new Blob([new Uint8Array(png)], { type: "image/png" }), "red.png");
    const accepted = await fetch(`${stack.edgeUrl}/v1/images/edits`, { method: "POST", headers: { authorization: `Bearer ${key}`, ...ASYNC }, body: form });
    const id = await expectAccepted(accepted);
    const { statuses, last } = await pollUntilEnded(key, `/v1/images/generations/${id}`);
    expect(statuses[0]).toBe(202);
    expect(last.status).toBe(200);
    const image = await fetch((await json(last)).data[0].url);
    expect(image.status).toBe(200);
    expect(await chargedOnceSettled(accountId)).toBe(FLARE_1K_MICROS);
  });

  it("refuses an edit of a model that does not edit as a synchronous edit would", async () => {
    const { key } = await newKey();
    const form = new FormData();
    form.append("model", "beta");
    form.append("prompt", "edit me");
    form.append("image", new Blob([new Uint8Array(await sharp({ create: { width: 64, height: 64, channels: 3, background: "white" } }).png().toBuffer())], { type: "image/png" }), "a.png");
    const refused = await fetch(`${stack.edgeUrl}/v1/images/edits`, { method: "POST", headers: { authorization: `Bearer ${key}`, ...ASYNC }, body: form });
    expect(refused.status).toBe(400);
    expect((await json(refused)).error.code).toBe("edits_not_available");
  });
});

describe("the polling loop of docs/api.md#async-submit, with the openai SDK", () => {
  it("submits with client.post and polls with client.get until 200, honouring Retry-After", async () => {
    const { key } = await newKey();
    const client = new OpenAI({ apiKey: key, baseURL: `${stack.edgeUrl}/v1`, fetch, maxRetries: 0 });
    const job = await client.post<{ id: string; status: string }>("/images/generations", {
      body: { model: "beta", prompt: "a fox, polled [sandbox:delay=1000]" },
      headers: { Prefer: "respond-async" },
    });
    expect(job.status).toBe("running");
    const waits: number[] = [];
    let result: OpenAI.ImagesResponse;
    for (;;) {
      const { data, response } = await client.get<OpenAI.ImagesResponse>(`/images/generations/${job.id}`).withResponse();
      if (response.status === 200) {
        result = data;
        break;
      }
      const seconds = Number(response.headers.get("retry-after") ?? "5");
      waits.push(seconds);
      await sleep(seconds * 1000);
    }
    expect(waits).toEqual([5]);
    expect(result.data?.[0]?.url).toMatch(/\/v1\/files\/img_/);
  });
});
