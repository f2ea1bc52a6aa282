import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freshDatabase } from "@orvado/testkit";
import { startSimulator, type Simulator } from "@orvado/simulators";
import { runOrvado, startTestStack, TEST_ADMIN, type TestStack } from "./harness.ts";
import { signedIn } from "./console-browser.ts";
import { chromium } from "playwright-core";

// What the operator sees of upstream failures and breakers, over the real transports: the
// openai and openai-compatible simulators on 127.0.0.1 (HTTP), the public API (HTTP), the
// console API as the admin and as the account's own user (HTTP), the CLI's entry function
// (RPC), PostgreSQL (or a PGlite directory) kept across a restart of the whole stack, and the
// console's pages in Chromium (the Channels page's Reset button, a request's Upstream cause).
// - The gpu-box channel answers with a url on 127.0.0.1 and may not reach private addresses:
//   BlockedUrlError, which the operator sees in the request detail and channel health, never the client.
// - The openai-main channel fails while the simulator is told to; two failures open its breaker.

const dir = mkdtempSync(join(tmpdir(), "orvado-operator-channels-"));
let gpuBox: Simulator;
let openai: Simulator;
let database: { url: string; drop(): Promise<void> };
let stack: TestStack;
let accountId: string;
let key: string;
const EMAIL = "channels-user@example.test";
const PASSWORD = "a long password";

function env(cooldownMs: number): NodeJS.ProcessEnv {
  const models = {
    models: [
      {
        id: "alpha-2.5-flare",
        family: "alpha",
        tiers: ["1K"],
        channels: [{ name: "openai-main", provider: "openai", upstreamModel: "gpt-image-1", baseUrl: `${openai.baseUrl}`, apiKeyEnv: "SIM_OPENAI_KEY", capacity: 4 }],
      },
      {
        id: "beta",
        family: "beta",
        tiers: ["1K"],
        channels: [{ name: "gpu-box", provider: "openai-compatible", upstreamModel: "local-flux", baseUrl: gpuBox.baseUrl, capacity: 4 }],
      },
    ],
  };
  writeFileSync(join(dir, "models.json"), JSON.stringify(models));
  return {
    ORVADO_MODELS_FILE: join(dir, "models.json"),
    SIM_OPENAI_KEY: "sk-sim",
    GENERATION_BREAKER_FAILURES: "2",
    GENERATION_BREAKER_COOLDOWN_MS: String(cooldownMs),
  };
}

const LONG_COOLDOWN_MS = 600_000;
const dataDirs: string[] = [];
async function start(cooldownMs: number): Promise<TestStack> {
  const started = await startTestStack(env(cooldownMs), { databaseUrl: database.url });
  dataDirs.push(started.dataDir);
  return started;
}
const orvado = (...argv: string[]) => runOrvado(stack, ...argv);

beforeAll(async () => {
  [gpuBox, openai] = await Promise.all([startSimulator("openai-compatible", { answerWithUrls: true }), startSimulator("openai", { behaviour: { apiKey: "sk-sim" } })]);
  // The restart below needs a database that outlives the stack: a PostgreSQL database, or a PGlite directory.
  database = process.env.TEST_DATABASE_URL ? await freshDatabase() : { url: join(dir, "pglite"), drop: async () => {} };
  stack = await start(LONG_COOLDOWN_MS);
  accountId = (await orvado("accounts", "create", "--email", EMAIL, "--password", PASSWORD)).json.account_id;
  await orvado("accounts", "topup", "--account", accountId, "--usd", "5");
  key = (await orvado("keys", "create", "--account", accountId)).json.key;
});
afterAll(async () => {
  await stack?.stop();
  await Promise.all([gpuBox?.close(), openai?.close()]);
  await database?.drop();
  for (const path of [dir, ...dataDirs]) rmSync(path, { recursive: true, force: true });
});

const generate = (model: string) =>
  fetch(`${stack.edgeUrl}/v1/images/generations`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
    body: JSON.stringify({ model, prompt: "a test card", size: "1024x1024" }),
  });

async function breakerOf(model: string, channel: string): Promise<string> {
  const { json } = await orvado("channels", "list");
  return json.channels.find((row: { model: string; channel: string }) => row.model === model && row.channel === channel).state;
}

async function openBreaker(): Promise<void> {
  openai.behave({ mode: "fail" });
  for (let failure = 0; failure < 2; failure += 1) expect((await generate("alpha-2.5-flare")).status).toBe(502);
  openai.behave({ mode: "ok" });
  expect(await breakerOf("alpha-2.5-flare", "openai-main")).toBe("open");
}

describe("an upstream failure's cause, for the operator only", () => {
  it("is kept with the failed job and shown in the admin's request detail, not to the client", async () => {
    const response = await generate("beta");
    expect(response.status).toBe(502);
    const text = await response.text();
    expect(JSON.parse(text).error).toMatchObject({ code: "async_image_failed", message: expect.stringContaining("The model failed the job") });
    expect(text).not.toMatch(/Blocked|127\.0\.0\.1|private/i);
    const requestId = response.headers.get("x-gateway-request-id")!;

    const lookup = await (await fetch(`${stack.edgeUrl}/v1/images/generations/${requestId}`, { headers: { authorization: `Bearer ${key}` } })).text();
    expect(lookup).not.toMatch(/Blocked|127\.0\.0\.1|private/i);

    const { rows } = await stack.db.query<{ failure_detail: string }>("SELECT failure_detail FROM generation.jobs WHERE request_id = $1", [requestId]);
    expect(rows[0]!.failure_detail).toMatch(/^gpu-box: BlockedUrlError/);

    const admin = await signedIn(stack.edgeUrl, TEST_ADMIN.email, TEST_ADMIN.password);
    const detail = await admin.call("GET", `/admin/accounts/${accountId}/usage/${requestId}`);
    expect(detail.status).toBe(200);
    expect(detail.body.job).toMatchObject({ status: "failed", error: { code: "async_image_failed" }, failureDetail: expect.stringMatching(/^gpu-box: BlockedUrlError: .*127\.0\.0\.1/) });

    const user = await signedIn(stack.edgeUrl, EMAIL, PASSWORD);
    const own = await user.call("GET", `/usage/${requestId}`);
    expect(own.status).toBe(200);
    expect(own.body.job.status).toBe("failed");
    expect(own.body.job).not.toHaveProperty("failureDetail");
    expect(JSON.stringify(own.body)).not.toMatch(/Blocked/);
  });

  it("is the channel's last failure in channel health, from PostgreSQL, in the console and the CLI", async () => {
    const admin = await signedIn(stack.edgeUrl, TEST_ADMIN.email, TEST_ADMIN.password);
    const channels = await admin.call("GET", "/admin/channels?hours=1");
    const gpu = channels.body.channels.find((row: { channel: string }) => row.channel === "gpu-box");
    expect(gpu.lastFailure).toEqual({ detail: expect.stringMatching(/^BlockedUrlError: /), at: expect.any(String) });
    expect(channels.body.channels.find((row: { channel: string }) => row.channel === "openai-main").lastFailure).toBeNull();
    const cli = await orvado("channels", "list", "--hours", "1");
    expect(cli.code).toBe(0);
    expect(cli.json.channels).toContainEqual(expect.objectContaining({ model: "beta", channel: "gpu-box", failed: 1, last_failure: { detail: gpu.lastFailure.detail, at: gpu.lastFailure.at } }));
    const { rows } = await stack.db.query<{ last_failure_detail: string }>("SELECT last_failure_detail FROM generation.channel_state WHERE channel_key = 'beta/gpu-box'");
    expect(rows).toEqual([{ last_failure_detail: gpu.lastFailure.detail }]);
  });
});

describe("circuit breakers seen and reset by the operator", () => {
  it("orvado channels list shows an open breaker and channels reset closes it", async () => {
    await openBreaker();
    expect((await generate("alpha-2.5-flare")).status).toBe(503);
    const reset = await orvado("channels", "reset", "--model", "alpha-2.5-flare", "--channel", "openai-main");
    expect(reset.code).toBe(0);
    expect(reset.json).toMatchObject({ model: "alpha-2.5-flare", channel: "openai-main", state: "closed", healthy: true });
    expect((await generate("alpha-2.5-flare")).status).toBe(200);
    const unknown = await orvado("channels", "reset", "--model", "alpha-2.5-flare", "--channel", "nope");
    expect([unknown.code, unknown.stderr]).toEqual([1, expect.stringMatching(/no channel "nope" of model "alpha-2.5-flare"/)]);
    expect((await orvado("channels", "reset", "--model", "alpha-2.5-flare")).code).toBe(2);
  });

  it("the console's reset closes it for the admin only", async () => {
    await openBreaker();
    const user = await signedIn(stack.edgeUrl, EMAIL, PASSWORD);
    const refused = await user.call("POST", "/admin/channels/reset", { body: { model: "alpha-2.5-flare", channel: "openai-main" } });
    expect([refused.status, refused.body.error.code]).toEqual([403, "forbidden"]);
    expect(await breakerOf("alpha-2.5-flare", "openai-main")).toBe("open");
    const admin = await signedIn(stack.edgeUrl, TEST_ADMIN.email, TEST_ADMIN.password);
    const missing = await admin.call("POST", "/admin/channels/reset", { body: { model: "alpha-2.5-flare", channel: "nope" } });
    expect(missing.status).toBe(404);
    const reset = await admin.call("POST", "/admin/channels/reset", { body: { model: "alpha-2.5-flare", channel: "openai-main" } });
    expect(reset.status).toBe(200);
    expect(reset.body).toEqual({ model: "alpha-2.5-flare", channel: "openai-main", state: "closed", healthy: true });
    expect((await admin.call("GET", "/admin/channels")).body.channels.find((row: { channel: string }) => row.channel === "openai-main").state).toBe("closed");
  });

  it("the Channels page shows the last failure and its Reset button closes the breaker (Chromium)", async () => {
    await openBreaker();
    const browser = await chromium.launch({ executablePath: process.env.CONSOLE_TEST_CHROMIUM ?? "/usr/bin/chromium", headless: true, args: ["--no-sandbox", "--disable-gpu"] });
    try {
      const page = await (await browser.newContext({ viewport: { width: 1280, height: 860 }, baseURL: stack.edgeUrl })).newPage();
      page.setDefaultTimeout(20_000);
      await page.goto("/console/sign-in");
      await page.locator('input[name="email"]').fill(TEST_ADMIN.email);
      await page.locator('input[name="password"]').fill(TEST_ADMIN.password);
      await page.getByRole("button", { name: "Sign in" }).click();
      await page.locator(".account-button").waitFor();
      await page.goto("/console/admin/channels");
      expect(await page.locator('tr[data-channel="beta/gpu-box"] [data-testid="last-failure"]').textContent()).toMatch(/^BlockedUrlError: /);
      const row = page.locator('tr[data-channel="alpha-2.5-flare/openai-main"]');
      const breaker = row.locator("td").nth(3);
      expect(await breaker.textContent()).toBe("open");
      await row.locator('[data-testid="reset-breaker"]').click();
      await expect.poll(() => breaker.textContent()).toBe("closed");
      expect(await row.locator('[data-testid="reset-breaker"]').count()).toBe(0);
      expect(await breakerOf("alpha-2.5-flare", "openai-main")).toBe("closed");
    } finally {
      await browser.close();
    }
  });

  it("a restart keeps a breaker open no longer than its cool-down from when it opened", async () => {
    await openBreaker();
    const openedRow = async () =>
      (await stack.db.query<{ opened_at: Date; opened_until: Date }>("SELECT opened_at, opened_until FROM generation.channel_state WHERE channel_key = 'alpha-2.5-flare/openai-main'")).rows[0]!;
    const before = await openedRow();
    expect(before.opened_until.getTime() - before.opened_at.getTime()).toBe(LONG_COOLDOWN_MS);

    // The same settings: still open, and not a moment longer than before the restart.
    await stack.stop();
    stack = await start(LONG_COOLDOWN_MS);
    expect(await openedRow()).toEqual(before);
    expect(await breakerOf("alpha-2.5-flare", "openai-main")).toBe("open");

    // A shorter cool-down: the breaker half-opens that long after it opened, and a trial that succeeds closes it.
    await stack.stop();
    stack = await start(1_000);
    const after = await openedRow();
    expect(after.opened_at).toEqual(before.opened_at);
    expect(after.opened_until.getTime()).toBe(before.opened_at.getTime() + 1_000);
    for (let attempt = 0; (await breakerOf("alpha-2.5-flare", "openai-main")) === "open" && attempt < 100; attempt += 1) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(await breakerOf("alpha-2.5-flare", "openai-main")).toBe("half-open");
    expect((await generate("alpha-2.5-flare")).status).toBe(200);
    expect(await breakerOf("alpha-2.5-flare", "openai-main")).toBe("closed");
  });
});
