import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EventSourceParserStream } from "eventsource-parser/stream";
import { startTestStack, TEST_ADMIN, runOrvado, type TestStack } from "./harness.ts";
import { signedIn, type ConsoleBrowser } from "./console-browser.ts";

// The console over real HTTP (edge, auth, billing, generation on their own ports;
// PostgreSQL with TEST_DATABASE_URL): two accounts use the playground, and each one's
// spend is its own (issue G item 8); an admin sets an account's limits (item 6).

let stack: TestStack;
let admin: ConsoleBrowser;

beforeAll(async () => {
  stack = await startTestStack();
  admin = await signedIn(stack.edgeUrl, TEST_ADMIN.email, TEST_ADMIN.password);
});
afterAll(async () => {
  await stack?.close();
});

async function newUser(email: string) {
  const created = await admin.call("POST", "/admin/accounts", { body: { email, password: "user-password-1", role: "user" } });
  expect(created.status).toBe(201);
  const id = created.body.account.id as string;
  expect((await admin.call("POST", `/admin/accounts/${id}/topup`, { body: { usd: "1.00", note: "test" } })).status).toBe(200);
  return { id, browser: await signedIn(stack.edgeUrl, email, "user-password-1") };
}

async function settledSpend(keyId: string): Promise<{ account_id: string; captured_micros: bigint; held_micros: bigint }> {
  for (let attempt = 0; attempt < 400; attempt += 1) {
    const { rows } = await stack.db.query<{ account_id: string; captured_micros: bigint; held_micros: bigint }>(
      "SELECT account_id, captured_micros, held_micros FROM billing.key_spend WHERE key_id = $1",
      [keyId],
    );
    if (rows[0] && BigInt(rows[0].held_micros) === 0n && BigInt(rows[0].captured_micros) > 0n) return rows[0];
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`the spend of ${keyId} never settled`);
}

describe("the console playground's spend, per account", () => {
  it("two accounts' playground requests land on two key_spend rows, each under its own account, and replay agrees", async () => {
    const first = await newUser("playground-a@example.test");
    const second = await newUser("playground-b@example.test");
    const one = await first.browser.call("POST", "/playground", { body: { model: "beta", prompt: "a boat", size: "1024x1024" } });
    const two = await second.browser.call("POST", "/playground", { body: { model: "beta", prompt: "a barn", size: "1024x1024", n: 2 } });
    expect([one.status, two.status]).toEqual([200, 200]);
    expect(one.body.cost.keyId).not.toBe(two.body.cost.keyId);

    // beta 1K is $0.02 an image: one image for the first account, two for the second.
    expect(await settledSpend(one.body.cost.keyId)).toMatchObject({ account_id: first.id, captured_micros: 20_000n });
    expect(await settledSpend(two.body.cost.keyId)).toMatchObject({ account_id: second.id, captured_micros: 40_000n });

    // Each account's usage filter "console" finds its own playground request only.
    const own = await first.browser.call("GET", "/usage?keyId=console");
    expect(own.body.requests.map((row: { requestId: string }) => row.requestId)).toEqual([one.body.requestId]);
    expect(own.body.requests[0].keyName).toBe("console playground");

    const replay = await runOrvado(stack, "ledger", "replay");
    expect([replay.code, replay.json.differences]).toEqual([0, []]);
  });
});

/** The playground's streamed answer over HTTP, read with eventsource-parser: its head and its events' JSON. */
async function streamed(browser: ConsoleBrowser, body: object) {
  const response = await fetch(`${stack.edgeUrl}/console/api/playground`, {
    method: "POST",
    headers: { cookie: browser.cookie!, "x-csrf-token": browser.csrfToken!, "content-type": "application/json", accept: "text/event-stream" },
    body: JSON.stringify(body),
  });
  const events: { type: string; [field: string]: unknown }[] = [];
  if ((response.headers.get("content-type") ?? "").startsWith("text/event-stream")) {
    for await (const event of response.body!.pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream())) {
      events.push({ ...JSON.parse(event.data), event: event.event });
    }
  }
  return { response, events };
}

describe("the playground's stream (server-sent events over HTTP, PostgreSQL)", () => {
  it("answers stream: true with OpenAI's completed event, the request id in the head, charged once to the playground key", async () => {
    const user = await newUser("playground-stream@example.test");
    const { response, events } = await streamed(user.browser, { model: "beta", prompt: "[sandbox:delay=600] a lantern", size: "1024x1024", stream: true, partial_images: 2 });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/);
    expect(response.headers.get("cache-control")).toBe("no-store");
    const requestId = response.headers.get("x-gateway-request-id")!;
    expect(requestId).toMatch(/^req_/);
    // The sandbox's downscaled renders as the partial images asked for, then the outcome.
    expect(events.map((event) => event.type)).toEqual(["image_generation.partial_image", "image_generation.partial_image", "image_generation.completed"]);
    expect(events.slice(0, 2).map((event) => event.partial_image_index)).toEqual([0, 1]);
    const completed = events[2];
    expect(completed).toMatchObject({ event: "image_generation.completed", size: "1024x1024", output_format: "png", quality: "auto", usage: { total_tokens: 0 } });
    expect(Buffer.from(completed!.b64_json as string, "base64").subarray(1, 4).toString()).toBe("PNG");

    const usage = await user.browser.call("GET", `/usage/${requestId}`);
    expect(usage.body.keyName).toBe("console playground");
    expect(await settledSpend(usage.body.keyId)).toMatchObject({ account_id: user.id, captured_micros: 20_000n });
    // The job's lookup for the session's account: done, with its image's link.
    const lookup = await user.browser.call("GET", `/playground/${requestId}`);
    expect([lookup.status, lookup.body.data.length]).toEqual([200, 1]);
  });

  it("answers a refusal before the job as JSON with its status, as /v1 does, and refuses bad stream options before any job", async () => {
    const user = await newUser("playground-stream-refused@example.test");
    const refused = await user.browser.call("POST", "/playground", { body: { model: "beta", prompt: "too big", size: "4096x4096", stream: true } });
    expect([refused.status, refused.body.error.code]).toEqual([400, "tier_not_offered"]);
    for (const [field, value] of [["partial_images", 4], ["partial_images", 1.5], ["stream", "yes"]] as const) {
      const bad = await user.browser.call("POST", "/playground", { body: { model: "beta", prompt: "x", stream: true, [field]: value } });
      expect([bad.status, bad.body.error.code, bad.body.error.message]).toEqual([400, "invalid_field", expect.stringContaining(field)]);
    }
    // Nothing was held or charged for any of them.
    expect((await user.browser.call("GET", "/balance")).body.availableUsd).toBe("1.000000");
  });
});

describe("account limits in the admin console", () => {
  it("an admin sets and clears an account's limits; the accounts list shows them; bad values are 400", async () => {
    const user = await newUser("limits@example.test");
    const set = await admin.call("PUT", `/admin/accounts/${user.id}/limits`, { body: { maxConcurrentJobs: 3, requestsPerMinute: 60 } });
    expect(set.status).toBe(200);
    expect(set.body.account.limits).toEqual({ maxConcurrentJobs: 3, requestsPerMinute: 60 });
    const listed = await admin.call("GET", "/admin/accounts");
    expect(listed.body.accounts.find((account: { id: string }) => account.id === user.id).limits).toEqual({ maxConcurrentJobs: 3, requestsPerMinute: 60 });
    const shown = await runOrvado(stack, "accounts", "show", "--account", user.id);
    expect(shown.json).toMatchObject({ max_concurrent_jobs: 3, requests_per_minute: 60 });

    const cleared = await admin.call("PUT", `/admin/accounts/${user.id}/limits`, { body: { maxConcurrentJobs: null, requestsPerMinute: null } });
    expect(cleared.body.account.limits).toEqual({ maxConcurrentJobs: null, requestsPerMinute: null });
    for (const body of [{ maxConcurrentJobs: -1, requestsPerMinute: null }, { maxConcurrentJobs: null, requestsPerMinute: 0 }, { maxConcurrentJobs: 1.5, requestsPerMinute: null }]) {
      const refused = await admin.call("PUT", `/admin/accounts/${user.id}/limits`, { body });
      expect([refused.status, refused.body.error.type]).toEqual([400, "gateway_error"]);
    }
    expect((await user.browser.call("PUT", `/admin/accounts/${user.id}/limits`, { body: { maxConcurrentJobs: 1000, requestsPerMinute: null } })).status).toBe(403);
  });
});
