import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { randomUUID } from "node:crypto";
import OpenAI from "openai";
import { AuthService, BillingService } from "@orvado/proto";
import { internalClient } from "@orvado/rpc";
import { startE2eStack, type E2eStack } from "./e2e-stack.ts";
import { openApiViolations, validatingFetch } from "./openapi-validation.ts";

// Issue D items 5-7 end to end: Idempotency-Key on POST /v1/images/generations,
// GET /v1/images/generations/<request id>, and /metrics, over real HTTP, real
// gRPC and real PostgreSQL (TEST_DATABASE_URL).

// Every response this suite receives is checked against the OpenAPI document (openapi-validation.ts).
const fetch = validatingFetch();
afterEach(() => {
  expect(openApiViolations.splice(0)).toEqual([]);
});

let stack: E2eStack;
let auth: ReturnType<typeof internalClient<typeof AuthService>>;
let billing: ReturnType<typeof internalClient<typeof BillingService>>;

const BETA_1K_MICROS = 20_000n; // config/prices.json: beta 1K = $0.02
const FUNDS_MICROS = 5_000_000n;

// biome-ignore lint/suspicious/noExplicitAny: the test reads fields of a JSON answer whose shape it asserts
const json = (response: Response): Promise<any> => response.json();

async function newFundedKey(): Promise<{ accountId: string; key: string }> {
  const { account } = await auth.createAccount({ email: `idem-${randomUUID()}@example.test`, password: "correct horse battery" });
  await billing.topUp({ accountId: account!.accountId, amountMicros: FUNDS_MICROS, note: "test" });
  const created = await auth.createKey({ accountId: account!.accountId, name: "test" });
  return { accountId: account!.accountId, key: created.secret };
}

const post = (key: string, body: unknown, headers: Record<string, string> = {}, signal?: AbortSignal) =>
  fetch(`${stack.edgeUrl}/v1/images/generations`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${key}`, ...headers },
    body: JSON.stringify(body),
    signal,
  });

const lookup = (key: string, requestId: string) =>
  fetch(`${stack.edgeUrl}/v1/images/generations/${requestId}`, { headers: { authorization: `Bearer ${key}` } });

/** Waits until billing has settled every hold of the account, then returns what it was charged in all. */
async function chargedOnceSettled(accountId: string): Promise<bigint> {
  for (let attempt = 0; attempt < 400; attempt += 1) {
    const balance = (await billing.getBalance({ accountId })).balance!;
    if (balance.heldMicros === 0n) return FUNDS_MICROS - balance.balanceMicros;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`holds of ${accountId} never settled`);
}

/** The account's job ids as generation recorded them (what a console listing would show). */
async function jobIdsOf(accountId: string): Promise<string[]> {
  const { rows } = await stack.db.query<{ request_id: string }>("SELECT request_id FROM generation.jobs WHERE account_id = $1 ORDER BY created_at", [accountId]);
  return rows.map((row) => row.request_id);
}

/** When generation recorded the job's end, on the database's clock. */
async function finishedAtOf(requestId: string): Promise<Date> {
  const { rows } = await stack.db.query<{ finished_at: Date }>("SELECT finished_at FROM generation.jobs WHERE request_id = $1", [requestId]);
  return rows[0]!.finished_at;
}

async function untilJobExists(accountId: string): Promise<string> {
  for (let attempt = 0; attempt < 400; attempt += 1) {
    const [id] = await jobIdsOf(accountId);
    if (id) return id;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error("the job never started");
}

beforeAll(async () => {
  stack = await startE2eStack();
  auth = internalClient(AuthService, stack.authUrl, stack.internalSecret);
  billing = internalClient(BillingService, stack.billingUrl, stack.internalSecret);
});
afterAll(async () => {
  await stack?.close();
});

describe("a client that disconnects", () => {
  it("is charged once for a 5-second job it left after 1 second, and fetches the result by request id", async () => {
    const { accountId, key } = await newFundedKey();
    const gaveUp = await post(key, { model: "beta", prompt: "a slow fox [sandbox:delay=5000]" }, {}, AbortSignal.timeout(1000)).catch((error) => error);
    expect(gaveUp).toBeInstanceOf(Error);
    const requestId = await untilJobExists(accountId);

    const whileRunning = await lookup(key, requestId);
    expect(whileRunning.status).toBe(202);
    expect(whileRunning.headers.get("retry-after")).toBe("5");
    expect(await json(whileRunning)).toMatchObject({ id: requestId, status: "running" });

    let finished = whileRunning;
    while (finished.status === 202) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      finished = await lookup(key, requestId);
    }
    expect(finished.status).toBe(200);
    const body = await json(finished);
    expect(Object.keys(body).sort()).toEqual(["created", "data"]);
    expect(body.data).toHaveLength(1);
    const download = await fetch(body.data[0].url);
    expect(download.status).toBe(200);
    expect(download.headers.get("content-type")).toBe("image/png");
    expect(await chargedOnceSettled(accountId)).toBe(BETA_1K_MICROS);
    expect(await jobIdsOf(accountId)).toEqual([requestId]);
  });
});

describe("a client that disconnects and retries with its Idempotency-Key", () => {
  it("gets the original job's result under the original request id, charged once", async () => {
    const { accountId, key } = await newFundedKey();
    const body = { model: "beta", prompt: "left early [sandbox:delay=5000]" };
    const headers = { "idempotency-key": `disconnect-${randomUUID()}` };
    const gaveUp = await post(key, body, headers, AbortSignal.timeout(1000)).catch((error) => error);
    expect(gaveUp).toBeInstanceOf(Error);
    const requestId = await untilJobExists(accountId);

    const retry = await post(key, body, headers);
    expect(retry.status).toBe(200);
    expect(retry.headers.get("x-request-id")).toBe(requestId);
    const answer = await json(retry);
    expect((await fetch(answer.data[0].url)).status).toBe(200);
    const again = await post(key, body, headers);
    expect(await json(again)).toEqual(answer);
    expect(await chargedOnceSettled(accountId)).toBe(BETA_1K_MICROS);
    expect(await jobIdsOf(accountId)).toEqual([requestId]);
    const cost = await json(await fetch(`${stack.edgeUrl}/api/cost/request/${requestId}`));
    expect(cost).toMatchObject({ status: "charged", images_delivered: 1, amount_micros: 20000 });
  });

  it("answers the same `created` the first time and on every retry: the job's finished_at on the database's clock, not the clock of the process that ran it", async () => {
    const { key } = await newFundedKey();
    const body = { model: "beta", prompt: "a clock that runs fast" };
    const headers = { "idempotency-key": `clock-${randomUUID()}` };
    // In the embedded project generation runs in this process: its clock runs 30 s fast for the
    // first request, as a replica's clock may differ from the database's. (The kafka project's
    // services keep their own clocks; there the test checks the same agreement.)
    const realNow = Date.now.bind(Date);
    const fast = vi.spyOn(Date, "now").mockImplementation(() => realNow() + 30_000);
    let first: Response;
    try {
      first = await post(key, body, headers);
    } finally {
      fast.mockRestore();
    }
    expect(first.status).toBe(200);
    const answer = await json(first);
    const finishedAt = await finishedAtOf(first.headers.get("x-request-id")!);
    expect(answer.created).toBe(Math.floor(finishedAt.getTime() / 1000));
    expect(await json(await post(key, body, headers))).toEqual(answer);
  });
});

describe("the openai SDK with an Idempotency-Key", () => {
  it("pays once when its own timeouts and retries outlast a slow job", async () => {
    const { accountId, key } = await newFundedKey();
    // Each attempt times out after 2 s on a 5-s job; every retry resends the key and attaches to the one job.
    const client = new OpenAI({ apiKey: key, baseURL: `${stack.edgeUrl}/v1`, timeout: 2000, maxRetries: 10, fetch });
    const { data: result, response } = await client.images
      .generate({ model: "beta", prompt: "patience [sandbox:delay=5000]" }, { headers: { "Idempotency-Key": randomUUID() } })
      .withResponse();
    expect(result.data?.[0]?.url).toMatch(/\/v1\/files\/img_/);
    expect(response.headers.get("idempotent-replayed")).toBe("true");
    expect(await jobIdsOf(accountId)).toEqual([response.headers.get("x-request-id")]);
    expect(await chargedOnceSettled(accountId)).toBe(BETA_1K_MICROS);
  });
});

describe("GET /v1/images/generations/<request id>", () => {
  it("shows a request only to its own account: any other id is 404", async () => {
    const owner = await newFundedKey();
    const stranger = await newFundedKey();
    const done = await post(owner.key, { model: "beta", prompt: "mine" });
    const requestId = done.headers.get("x-request-id")!;
    expect((await lookup(owner.key, requestId)).status).toBe(200);
    for (const [key, id] of [[stranger.key, requestId], [owner.key, "req_AAAAAAAAAAAAAAAAAAAAAA"], [owner.key, "not-an-id"]] as const) {
      const response = await lookup(key, id);
      expect(response.status, id).toBe(404);
      expect((await json(response)).error).toMatchObject({ type: "gateway_error", code: "not_found" });
    }
    expect((await fetch(`${stack.edgeUrl}/v1/images/generations/${requestId}`)).status).toBe(401);
  });

  it("returns a b64_json result as a link, and a failure in the documented error shape", async () => {
    const { key } = await newFundedKey();
    const b64 = await post(key, { model: "beta", prompt: "inline", response_format: "b64_json" });
    const stored = await json(await lookup(key, b64.headers.get("x-request-id")!));
    expect(stored.data[0].b64_json).toBeUndefined();
    expect((await fetch(stored.data[0].url)).status).toBe(200);

    const failed = await post(key, { model: "beta", prompt: "[sandbox:refuse] no" });
    const failedId = failed.headers.get("x-request-id")!;
    const answer = await lookup(key, failedId);
    expect(answer.status).toBe(502);
    expect(answer.headers.get("x-should-retry")).toBe("false");
    const body = await json(answer);
    expect(body.error).toMatchObject({ type: "gateway_error", code: "async_image_failed" });
    expect(body.error.message.endsWith(`(request id: ${failedId})`)).toBe(true);
  });
});

describe("Idempotency-Key", () => {
  it("answers concurrent retries of a running job with the one job, charged once", async () => {
    const { accountId, key } = await newFundedKey();
    const body = { model: "beta", prompt: "three at once [sandbox:delay=3000]" };
    const headers = { "idempotency-key": `concurrent-${randomUUID()}` };
    const first = post(key, body, headers);
    await untilJobExists(accountId);
    const responses = await Promise.all([first, post(key, body, headers), post(key, body, headers)]);
    const ids = new Set(responses.map((response) => response.headers.get("x-request-id")));
    expect(responses.map((response) => response.status)).toEqual([200, 200, 200]);
    expect(ids.size).toBe(1);
    const bodies = await Promise.all(responses.map(json));
    expect(new Set(bodies.map((answer) => answer.data[0].url)).size).toBe(1);
    expect(responses.map((response) => response.headers.get("idempotent-replayed"))).toEqual([null, "true", "true"]);
    expect(responses.every((response) => response.headers.get("x-gateway-request-id") === response.headers.get("x-request-id"))).toBe(true);
    expect(await chargedOnceSettled(accountId)).toBe(BETA_1K_MICROS);
    expect(await jobIdsOf(accountId)).toEqual([...ids]);
  });

  it("answers many simultaneous first attempts with one job", async () => {
    const { accountId, key } = await newFundedKey();
    const headers = { "idempotency-key": `race-${randomUUID()}` };
    const responses = await Promise.all(Array.from({ length: 6 }, () => post(key, { model: "beta", prompt: "a race" }, headers)));
    expect(responses.map((response) => response.status)).toEqual([200, 200, 200, 200, 200, 200]);
    expect(new Set(responses.map((response) => response.headers.get("x-request-id"))).size).toBe(1);
    expect(await chargedOnceSettled(accountId)).toBe(BETA_1K_MICROS);
    expect(await jobIdsOf(accountId)).toHaveLength(1);
  });

  it("replays a finished request, b64_json included, without charging again", async () => {
    const { accountId, key } = await newFundedKey();
    const body = { model: "beta", prompt: "replay me", response_format: "b64_json" };
    const headers = { "idempotency-key": `after-${randomUUID()}` };
    const first = await post(key, body, headers);
    const original = await json(first);
    await chargedOnceSettled(accountId);
    const retry = await post(key, { response_format: "b64_json", prompt: "replay me", model: "beta" }, headers);
    expect(retry.status).toBe(200);
    expect(retry.headers.get("x-request-id")).toBe(first.headers.get("x-request-id"));
    expect(retry.headers.get("idempotent-replayed")).toBe("true");
    const replayed = await json(retry);
    expect(replayed).toEqual(original);
    expect(await chargedOnceSettled(accountId)).toBe(BETA_1K_MICROS);
  });

  it("refuses the same key with a different body with 409, charging nothing for it", async () => {
    const { accountId, key } = await newFundedKey();
    const headers = { "idempotency-key": `reused-${randomUUID()}` };
    expect((await post(key, { model: "beta", prompt: "one thing" }, headers)).status).toBe(200);
    const reused = await post(key, { model: "beta", prompt: "another thing" }, headers);
    expect(reused.status).toBe(409);
    const body = await json(reused);
    expect(body.error).toMatchObject({ type: "gateway_error", code: "idempotency_key_reused" });
    expect(body.error.message.endsWith(`(request id: ${reused.headers.get("x-request-id")})`)).toBe(true);
    expect(await chargedOnceSettled(accountId)).toBe(BETA_1K_MICROS);
  });

  it("keeps keys per account: another account may use the same key for its own request", async () => {
    const a = await newFundedKey();
    const b = await newFundedKey();
    const headers = { "idempotency-key": `shared-${randomUUID()}` };
    const first = await post(a.key, { model: "beta", prompt: "account a" }, headers);
    const second = await post(b.key, { model: "beta", prompt: "account b" }, headers);
    expect([first.status, second.status]).toEqual([200, 200]);
    expect(first.headers.get("x-request-id")).not.toBe(second.headers.get("x-request-id"));
  });

  it("keeps keys per API key: two keys of one account with the same Idempotency-Key run independent requests", async () => {
    const { accountId, key: first } = await newFundedKey();
    const second = (await auth.createKey({ accountId, name: "second" })).secret;
    const headers = { "idempotency-key": `per-key-${randomUUID()}` };
    const body = { model: "beta", prompt: "the same body from two keys" };
    const a = await post(first, body, headers);
    const b = await post(second, body, headers);
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(b.headers.get("idempotent-replayed")).toBeNull();
    expect(b.headers.get("x-request-id")).not.toBe(a.headers.get("x-request-id"));
    expect(await jobIdsOf(accountId)).toHaveLength(2);
    // Each key still replays its own request.
    const again = await post(second, body, headers);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.headers.get("x-request-id")).toBe(b.headers.get("x-request-id"));
  });

  it("never replays another key's result to a key restricted to other models", async () => {
    const { accountId, key: open } = await newFundedKey();
    const restricted = (await auth.createKey({ accountId, name: "beta only", models: ["beta"] })).secret;
    const headers = { "idempotency-key": `restricted-${randomUUID()}` };
    const body = { model: "beta-2-lite", prompt: "a model the restricted key may not use" };
    expect((await post(open, body, headers)).status).toBe(200);
    const refused = await post(restricted, body, headers);
    expect(refused.status).toBe(403);
    expect(refused.headers.get("idempotent-replayed")).toBeNull();
    expect((await json(refused)).error).toMatchObject({ type: "gateway_error", code: "model_not_allowed" });
  });

  it("runs a new job on a retry after a failed attempt, neither charged", async () => {
    const { accountId, key } = await newFundedKey();
    const headers = { "idempotency-key": `failed-${randomUUID()}` };
    const body = { model: "beta", prompt: "[sandbox:fail] broken" };
    const first = await post(key, body, headers);
    const retry = await post(key, body, headers);
    expect([first.status, retry.status]).toEqual([502, 502]);
    expect(retry.headers.get("x-request-id")).not.toBe(first.headers.get("x-request-id"));
    expect(retry.headers.get("idempotent-replayed")).toBeNull();
    expect(await jobIdsOf(accountId)).toHaveLength(2);
    expect(await chargedOnceSettled(accountId)).toBe(0n);
  });

  it("refuses a malformed key with 400 before anything runs", async () => {
    const { accountId, key } = await newFundedKey();
    for (const bad of ["x".repeat(256), "has space", "ünïcode"]) {
      const response = await post(key, { model: "beta", prompt: "x" }, { "idempotency-key": bad });
      expect(response.status, bad).toBe(400);
      expect((await json(response)).error).toMatchObject({ type: "gateway_error", code: "invalid_request" });
    }
    expect(await jobIdsOf(accountId)).toEqual([]);
  });
});

describe("GET /metrics", () => {
  it("shows a job's counters per model and channel, and the edge's own request counters", async () => {
    const { key } = await newFundedKey();
    const sample = (text: string, pattern: RegExp) => Number(pattern.exec(text)?.[1] ?? 0);
    const succeeded = /^orvado_generation_outcomes_total\{model="beta-2-lite",channel="[^"]+",outcome="succeeded"\} (\d+)$/m;
    const refused = /^orvado_generation_outcomes_total\{model="beta-2-lite",channel="[^"]+",outcome="refused"\} (\d+)$/m;
    const edgeOk = /^orvado_edge_http_requests_total\{method="POST",route="\/v1\/images\/generations",status="200"\} (\d+)$/m;
    const before = await (await fetch(`${stack.edgeUrl}/metrics`)).text();

    expect((await post(key, { model: "beta-2-lite", prompt: "counted" })).status).toBe(200);
    expect((await post(key, { model: "beta-2-lite", prompt: "[sandbox:refuse] counted" })).status).toBe(502);

    const response = await fetch(`${stack.edgeUrl}/metrics`);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^text\/plain/);
    const after = await response.text();
    expect(sample(after, succeeded) - sample(before, succeeded)).toBe(1);
    expect(sample(after, refused) - sample(before, refused)).toBe(1);
    expect(sample(after, edgeOk) - sample(before, edgeOk)).toBe(1);
    expect(after).toMatch(/^orvado_generation_job_duration_seconds_count\{model="beta-2-lite",channel="[^"]+",outcome="succeeded"\} \d+$/m);
    expect(after).toMatch(/^orvado_generation_capacity_limit\{model="beta-2-lite",channel="[^"]+"\} \d+$/m);
    expect(after).toMatch(/^orvado_generation_jobs_in_flight\{model="beta-2-lite",channel="[^"]+"\} 0$/m);
    expect(after).toMatch(/^orvado_edge_generation_metrics_up 1$/m);
    // Each step of the answer's path: the success went through all four, the refusal through all but store.
    const steps = (text: string, step: string) => sample(text, new RegExp(`^orvado_generation_job_step_seconds_count\\{step="${step}"\\} (\\d+)$`, "m"));
    expect(["slot_and_hold", "upstream", "store", "outcome"].map((step) => steps(after, step) - steps(before, step))).toEqual([2, 2, 1, 2]);
  });
});
