import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Ajv2020 } from "ajv/dist/2020.js";
import { startTestStack, TEST_ADMIN, type TestStack } from "./harness.ts";
import { ConsoleBrowser, signedIn } from "./console-browser.ts";
import { WebhookReceiver, verified } from "./webhook-receiver.ts";

// Webhooks end to end over real HTTP and PostgreSQL (the in-process stack): endpoints made
// through the console API, deliveries of succeeded and failed jobs to a local node:http
// receiver that verifies them with standardwebhooks, retries on the schedule, redelivery,
// the operator's view, and isolation between accounts.

let stack: TestStack;
let receiver: WebhookReceiver;
let admin: ConsoleBrowser;

interface Tenant {
  id: string;
  browser: ConsoleBrowser;
  apiKey: string;
}
let a: Tenant;
let b: Tenant;

async function tenant(name: string): Promise<Tenant> {
  const email = `${name}@example.test`;
  const created = await admin.call("POST", "/admin/accounts", { body: { email, password: "user-password-1", role: "user" } });
  const id = created.body.account.id as string;
  await admin.call("POST", `/admin/accounts/${id}/topup`, { body: { usd: "5", note: "test" } });
  const browser = await signedIn(stack.edgeUrl, email, "user-password-1");
  const { secret } = (await browser.call("POST", "/keys", { body: { name: `${name}'s key` } })).body;
  return { id, browser, apiKey: secret };
}

async function generate(who: Tenant, prompt: string): Promise<{ status: number; requestId: string }> {
  const response = await fetch(`${stack.edgeUrl}/v1/images/generations`, {
    method: "POST",
    headers: { authorization: `Bearer ${who.apiKey}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "beta", prompt, size: "1024x1024" }),
  });
  await response.arrayBuffer();
  return { status: response.status, requestId: response.headers.get("x-request-id")! };
}

async function deliveriesOf(who: Tenant, endpointId: string) {
  return (await who.browser.call("GET", `/webhooks/deliveries?endpointId=${endpointId}`)).body.deliveries;
}

beforeAll(async () => {
  receiver = await WebhookReceiver.start();
  stack = await startTestStack({ WEBHOOK_ALLOW_PRIVATE_URLS: "true", WEBHOOK_FIRST_RETRY_MS: "300", WEBHOOK_POLL_MS: "100" });
  admin = await signedIn(stack.edgeUrl, TEST_ADMIN.email, TEST_ADMIN.password);
  a = await tenant("hooks-a");
  b = await tenant("hooks-b");
});
afterAll(async () => {
  await stack?.close();
  await receiver?.close();
});

/** orvado_webhook_attempts_total by result, read from the edge's /metrics (generation's counters). */
async function webhookAttempts(): Promise<Record<"delivered" | "retrying" | "failed", number>> {
  const text = await (await fetch(`${stack.edgeUrl}/metrics`)).text();
  const read = (result: string) => Number(new RegExp(`^orvado_webhook_attempts_total\\{result="${result}"\\} (\\d+)`, "m").exec(text)?.[1] ?? 0);
  return { delivered: read("delivered"), retrying: read("retrying"), failed: read("failed") };
}

describe("webhooks over HTTP to a local receiver", () => {
  it("delivers a succeeded and a failed job, signed, with the request's id, model, size, cost and images or error", async () => {
    const created = await a.browser.call("POST", "/webhooks", { body: { url: `${receiver.url}/outcomes` } });
    expect(created.status).toBe(201);
    expect(created.body.endpoint).toMatchObject({ url: `${receiver.url}/outcomes`, events: ["image.generation.succeeded", "image.generation.failed"] });
    const secret: string = created.body.secret;
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(secret.slice(6), "base64").length).toBeGreaterThanOrEqual(24);
    expect((await a.browser.call("GET", "/webhooks")).text).not.toContain(secret);

    const ok = await generate(a, "a lighthouse");
    const failed = await generate(a, "a lighthouse [sandbox:fail]");
    expect(ok.status).toBe(200);
    expect(failed.status).not.toBe(200);
    const received = await receiver.waitFor("/outcomes", 2);
    const bodies = received.map((entry) => verified(secret, entry));
    const success = bodies.find((body) => body.data.id === ok.requestId);
    const failure = bodies.find((body) => body.data.id === failed.requestId);

    const cost = (await (await fetch(`${stack.edgeUrl}/api/cost/request/${ok.requestId}`)).json()) as { amount_usd: string; status: string };
    expect(success).toMatchObject({
      type: "image.generation.succeeded",
      data: { id: ok.requestId, status: "succeeded", model: "beta", size: "1024x1024", cost: cost.amount_usd },
    });
    expect(cost.status).toBe("charged");
    expect(Date.parse(success.timestamp)).not.toBeNaN();
    expect(success.data.images).toHaveLength(1);
    const image = await fetch(success.data.images[0].url);
    expect(image.status).toBe(200);
    expect(image.headers.get("content-type")).toBe("image/png");

    expect(failure).toMatchObject({
      type: "image.generation.failed",
      data: { id: failed.requestId, status: "failed", model: "beta", size: "1024x1024", cost: "0.000000" },
    });
    expect(failure.data.error.code).toEqual(expect.any(String));
    expect(failure.data.error.message).toContain("sandbox");
    expect(failure.data.images).toBeUndefined();

    // Both bodies match the webhooks section of the OpenAPI document the edge serves.
    const ajv = new Ajv2020({ strict: false, validateFormats: false });
    ajv.addSchema((await (await fetch(`${stack.edgeUrl}/openapi.json`)).json()) as object, "served");
    const matchesDocument = ajv.getSchema("served#/components/schemas/WebhookEvent")!;
    expect([matchesDocument(success), matchesDocument(failure)]).toEqual([true, true]);

    // Each delivery is listed with its one successful attempt.
    const deliveries = await deliveriesOf(a, created.body.endpoint.id);
    expect(deliveries).toHaveLength(2);
    for (const delivery of deliveries) {
      expect(delivery).toMatchObject({ status: "succeeded", nextAttemptAt: null });
      expect(delivery.attempts).toEqual([{ at: expect.any(String), durationMs: expect.any(Number), statusCode: 200, error: null }]);
      expect(received.find((entry) => entry.headers["webhook-id"] === delivery.id)).toBeDefined();
    }
    await a.browser.call("DELETE", `/webhooks/${created.body.endpoint.id}`);
  });

  it("retries a receiver answering 500 on the schedule, with one webhook-id, fails after the last step, and redelivers on request", async () => {
    const attemptsBefore = await webhookAttempts();
    receiver.answers.set("/flaky", 500);
    const created = await a.browser.call("POST", "/webhooks", { body: { url: `${receiver.url}/flaky`, events: ["image.generation.succeeded"] } });
    const secret: string = created.body.secret;
    const job = await generate(a, "a windmill");
    const [first, second] = await receiver.waitFor("/flaky", 2);
    expect(first!.headers["webhook-id"]).toBe(second!.headers["webhook-id"]);
    // The retry came after the schedule's first step (shortened by WEBHOOK_FIRST_RETRY_MS).
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(300);
    expect(verified(secret, second!).data.id).toBe(job.requestId);

    let [delivery] = await deliveriesOf(a, created.body.endpoint.id);
    for (let wait = 0; delivery.attempts.length < 2 && wait < 100; wait += 1) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      [delivery] = await deliveriesOf(a, created.body.endpoint.id);
    }
    expect(delivery.status).toBe("pending");
    expect(delivery.attempts.map((attempt: { statusCode: number; error: string }) => [attempt.statusCode, attempt.error])).toEqual([
      [500, "the endpoint answered 500"],
      [500, "the endpoint answered 500"],
    ]);
    // The next step of the schedule after two failures: 5 minutes.
    const wait = Date.parse(delivery.nextAttemptAt) - Date.parse(delivery.attempts[1].at);
    expect(wait).toBeGreaterThan(4.5 * 60_000);
    expect(wait).toBeLessThan(5.5 * 60_000);

    // Skip to the schedule's end (as if five more attempts had failed over the hours): the eighth failure is final.
    await stack.db.query("UPDATE generation.webhook_deliveries SET failed_attempts = 7, next_attempt_at = now() WHERE delivery_id = $1", [delivery.id]);
    await receiver.waitFor("/flaky", 3);
    for (let wait = 0; delivery.status !== "failed" && wait < 100; wait += 1) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      [delivery] = await deliveriesOf(a, created.body.endpoint.id);
    }
    expect([delivery.status, delivery.nextAttemptAt, delivery.attempts.length]).toEqual(["failed", null, 3]);

    receiver.answers.set("/flaky", 204);
    const redelivered = await a.browser.call("POST", `/webhooks/deliveries/${delivery.id}/redeliver`);
    expect(redelivered.status).toBe(202);
    const fourth = (await receiver.waitFor("/flaky", 4))[3]!;
    expect(fourth.headers["webhook-id"]).toBe(delivery.id);
    expect(verified(secret, fourth).data.id).toBe(job.requestId);
    for (let wait = 0; delivery.status !== "succeeded" && wait < 100; wait += 1) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      [delivery] = await deliveriesOf(a, created.body.endpoint.id);
    }
    expect(delivery.status).toBe("succeeded");
    expect(delivery.attempts.at(-1)).toMatchObject({ statusCode: 204, error: null });

    // The operator sees the account's endpoints and deliveries with their attempts.
    const operator = await admin.call("GET", `/admin/accounts/${a.id}/webhooks`);
    expect(operator.body.endpoints.map((endpoint: { id: string }) => endpoint.id)).toContain(created.body.endpoint.id);
    expect(operator.body.deliveries.find((entry: { id: string }) => entry.id === delivery.id).attempts).toHaveLength(4);
    expect(operator.text).not.toContain(secret);

    // /metrics counts the attempts by result: two retried, the schedule's last failed, the redelivery delivered.
    const attemptsAfter = await webhookAttempts();
    expect(attemptsAfter.retrying - attemptsBefore.retrying).toBeGreaterThanOrEqual(2);
    expect(attemptsAfter.failed - attemptsBefore.failed).toBeGreaterThanOrEqual(1);
    expect(attemptsAfter.delivered - attemptsBefore.delivered).toBeGreaterThanOrEqual(1);
  });

  it("delivers the outcome of an async submit (Prefer: respond-async), the client having left at the 202", async () => {
    const created = await a.browser.call("POST", "/webhooks", { body: { url: `${receiver.url}/async`, events: ["image.generation.succeeded"] } });
    const response = await fetch(`${stack.edgeUrl}/v1/images/generations`, {
      method: "POST",
      headers: { authorization: `Bearer ${a.apiKey}`, "content-type": "application/json", prefer: "respond-async" },
      body: JSON.stringify({ model: "beta", prompt: "a slow lighthouse [sandbox:delay=300]", size: "1024x1024" }),
    });
    expect(response.status).toBe(202);
    const { id } = (await response.json()) as { id: string };
    const [entry] = await receiver.waitFor("/async", 1);
    expect(verified(created.body.secret, entry!).data).toMatchObject({ id, status: "succeeded", images: [{ url: expect.stringContaining("/v1/files/") }] });
  });

  it("rotates a secret: later deliveries verify with the new one only", async () => {
    const created = await a.browser.call("POST", "/webhooks", { body: { url: `${receiver.url}/rotated`, events: ["image.generation.succeeded"] } });
    const rotated = await a.browser.call("POST", `/webhooks/${created.body.endpoint.id}/rotate-secret`);
    expect(rotated.status).toBe(200);
    expect(rotated.body.secret).not.toBe(created.body.secret);
    await generate(a, "a harbour");
    const [entry] = await receiver.waitFor("/rotated", 1);
    expect(verified(rotated.body.secret, entry!).type).toBe("image.generation.succeeded");
    expect(() => verified(created.body.secret, entry!)).toThrow();
  });

  it("refuses bad endpoint input with 400 in the error shape", async () => {
    const cases: [unknown, string][] = [
      [{ url: "ftp://example.com/hook" }, "invalid_field"],
      [{ url: "https://user:pass@example.com/hook" }, "invalid_field"],
      [{ url: "not a url" }, "invalid_field"],
      [{ url: `https://example.com/${"a".repeat(2100)}` }, "invalid_field"],
      [{ url: "https://example.com/\ud800" }, "invalid_field"],
      [{ url: `${receiver.url}/x`, events: ["image.generation.started"] }, "invalid_field"],
      [{ url: `${receiver.url}/x`, colour: "red" }, "unknown_field"],
      [{}, "missing_field"],
    ];
    for (const [body, code] of cases) {
      const answer = await a.browser.call("POST", "/webhooks", { body });
      expect([answer.status, answer.body.error.code, answer.body.error.type]).toEqual([400, code, "gateway_error"]);
    }
  });
});

describe("webhook isolation between accounts (console API over HTTP)", () => {
  it("keeps A's endpoints and deliveries out of B's sight and reach", async () => {
    const created = await a.browser.call("POST", "/webhooks", { body: { url: `${receiver.url}/a-only` } });
    const endpointId = created.body.endpoint.id;
    await generate(a, "a quiet street");
    await receiver.waitFor("/a-only", 1);
    const [delivery] = await deliveriesOf(a, endpointId);

    expect((await b.browser.call("GET", "/webhooks")).body.endpoints).toEqual([]);
    expect((await b.browser.call("GET", `/webhooks/deliveries?endpointId=${endpointId}`)).body.deliveries).toEqual([]);
    expect((await b.browser.call("GET", "/webhooks/deliveries")).body.deliveries).toEqual([]);
    for (const [method, path] of [
      ["DELETE", `/webhooks/${endpointId}`],
      ["POST", `/webhooks/${endpointId}/rotate-secret`],
      ["POST", `/webhooks/deliveries/${delivery.id}/redeliver`],
    ] as const) {
      const answer = await b.browser.call(method, path);
      expect([path, answer.status, answer.body.error.code]).toEqual([path, 404, "not_found"]);
    }
    // B's own jobs never reach A's endpoint.
    const before = receiver.on("/a-only").length;
    const bJob = await generate(b, "B's picture");
    expect(bJob.status).toBe(200);
    const aJob = await generate(a, "A's picture");
    await receiver.waitFor("/a-only", before + 1);
    expect(receiver.on("/a-only").some((entry) => entry.body.includes(bJob.requestId))).toBe(false);
    expect(receiver.on("/a-only").some((entry) => entry.body.includes(aJob.requestId))).toBe(true);

    // The guards on every webhook route: a session (401), the CSRF header on writes (403), the admin role for the operator's view.
    const routes = [
      ["GET", "/webhooks"],
      ["POST", "/webhooks"],
      ["DELETE", `/webhooks/${endpointId}`],
      ["POST", `/webhooks/${endpointId}/rotate-secret`],
      ["GET", "/webhooks/deliveries"],
      ["POST", `/webhooks/deliveries/${delivery.id}/redeliver`],
      ["GET", `/admin/accounts/${a.id}/webhooks`],
    ] as const;
    for (const [method, path] of routes) {
      const body = method === "POST" && path === "/webhooks" ? { url: `${receiver.url}/x` } : undefined;
      expect([path, (await a.browser.call(method, path, { body, cookie: null })).status]).toEqual([path, 401]);
      if (method !== "GET") expect([path, (await a.browser.call(method, path, { body, csrf: null })).body.error.code]).toEqual([path, "csrf_failed"]);
    }
    expect((await b.browser.call("GET", `/admin/accounts/${a.id}/webhooks`)).body.error.code).toBe("forbidden");
    // A's endpoint is untouched.
    expect((await a.browser.call("GET", "/webhooks")).body.endpoints.map((endpoint: { id: string }) => endpoint.id)).toContain(endpointId);
  });
});
