import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestStack, TEST_ADMIN, type TestStack } from "./harness.ts";
import { ConsoleBrowser, signedIn } from "./console-browser.ts";

// The operator's console API over real HTTP against the whole stack (the services in this
// process, calling each other in-process through their servers' interceptors; PostgreSQL
// when TEST_DATABASE_URL is set): the overview across accounts, channel
// health from generation's jobs, an account's page with its statement, usage and a signed
// adjustment, and one request's detail with its job. The stack is this file's own, so the
// sums below are exactly what the test did.

let stack: TestStack;
let admin: ConsoleBrowser;
let user: ConsoleBrowser;
let accountId: string;
const ids: { ok: string[]; failed?: string } = { ok: [] };
const EMAIL = "operator-view@example.test";

const generate = (key: string, prompt: string) =>
  fetch(`${stack.edgeUrl}/v1/images/generations`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "beta", prompt, size: "1024x1024" }),
  });

async function settled(requestId: string) {
  for (let attempt = 0; attempt < 400; attempt += 1) {
    const answer = await user.call("GET", `/usage/${requestId}`);
    if (answer.status === 200 && answer.body.status !== "pending") return answer.body;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`${requestId} stayed pending`);
}

beforeAll(async () => {
  stack = await startTestStack();
  admin = await signedIn(stack.edgeUrl, TEST_ADMIN.email, TEST_ADMIN.password);
  const created = await admin.call("POST", "/admin/accounts", { body: { email: EMAIL, password: "operator-view-1", role: "user" } });
  accountId = created.body.account.id;
  expect((await admin.call("POST", `/admin/accounts/${accountId}/topup`, { body: { usd: "5.000000", note: "invoice 7" } })).status).toBe(200);
  user = await signedIn(stack.edgeUrl, EMAIL, "operator-view-1");
  const key = await user.call("POST", "/keys", { body: { name: "server" } });
  for (const prompt of ["a harbour", "a kite"]) {
    const response = await generate(key.body.secret, prompt);
    expect(response.status).toBe(200);
    ids.ok.push(response.headers.get("x-gateway-request-id")!);
  }
  const failed = await generate(key.body.secret, "a storm [sandbox:fail]");
  expect(failed.status).toBe(502);
  ids.failed = failed.headers.get("x-gateway-request-id")!;
  for (const requestId of [...ids.ok, ids.failed]) await settled(requestId);
}, 120_000);
afterAll(async () => {
  await stack?.close();
});

describe("the operator's console API", () => {
  it("is for admins only", async () => {
    for (const path of ["/admin/overview", "/admin/channels", `/admin/accounts/${accountId}`, `/admin/accounts/${accountId}/statement`]) {
      expect((await user.call("GET", path)).status, path).toBe(403);
    }
  });

  it("counts only charged requests as the account's requests per day, the others apart", async () => {
    const { body } = await user.call("GET", "/spend?days=1");
    expect(body.days).toEqual([{ date: new Date().toISOString().slice(0, 10), usd: "0.040000", micros: 40_000, requests: 2, notCharged: 1, pending: 0 }]);
  });

  it("sums requests, spend and top-ups across accounts, ranks accounts and models, and gives the error rate", async () => {
    const { status, body } = await admin.call("GET", "/admin/overview?days=7&top=5");
    expect(status).toBe(200);
    expect(body.days).toHaveLength(7);
    expect(body.days.at(-1)).toMatchObject({ requests: 3, charged: 2, notCharged: 1, pending: 0, spendUsd: "0.040000", topUpUsd: "5.000000" });
    expect(body.totals).toEqual({
      requests: 3,
      charged: 2,
      notCharged: 1,
      pending: 0,
      errorRate: 1 / 3,
      spend: { usd: "0.040000", micros: 40_000 },
      topUps: { usd: "5.000000", micros: 5_000_000 },
    });
    expect(body.topAccounts).toEqual([{ id: accountId, email: EMAIL, requests: 3, charged: 2, notCharged: 1, spendUsd: "0.040000", spendMicros: 40_000 }]);
    expect(body.topModels).toEqual([{ id: "beta", requests: 3, charged: 2, notCharged: 1, spendUsd: "0.040000", spendMicros: 40_000 }]);
    expect((await admin.call("GET", "/admin/overview?days=0")).status).toBe(400);
    expect((await admin.call("GET", "/admin/overview?top=1e1")).status).toBe(400);
  });

  it("shows each channel's jobs, success rate and latency beside its breaker state", async () => {
    const { body } = await admin.call("GET", "/admin/channels?hours=1");
    expect(body.hours).toBe(1);
    const beta = body.channels.find((row: { model: string }) => row.model === "beta");
    expect(beta).toMatchObject({ channel: "sandbox", provider: "sandbox", state: "closed", healthy: true, succeeded: 2, failed: 1, running: 0, successRate: 2 / 3 });
    for (const value of [beta.latencyMs.avg, beta.latencyMs.p50, beta.latencyMs.p95]) expect(value).toBeGreaterThanOrEqual(0);
    const idle = body.channels.find((row: { model: string }) => row.model === "beta-pro");
    expect(idle).toMatchObject({ succeeded: 0, failed: 0, successRate: null, latencyMs: { avg: null, p50: null, p95: null } });
    expect((await admin.call("GET", "/admin/channels?hours=721")).status).toBe(400);
  });

  it("shows an account's balance and keys with their spend, and 404 for an unknown account", async () => {
    const { body } = await admin.call("GET", `/admin/accounts/${accountId}`);
    expect(body.account).toMatchObject({ id: accountId, email: EMAIL, role: "user", disabled: false, passwordGenerated: false });
    expect(body.balance).toMatchObject({ balanceUsd: "4.960000", heldUsd: "0.000000" });
    expect(body.keys).toEqual([expect.objectContaining({ name: "server", spentUsd: "0.040000" })]);
    expect((await admin.call("GET", "/admin/accounts/acct_nobody")).status).toBe(404);
  });

  it("adjusts a balance by a signed amount with a required note, recorded in the statement with who did it", async () => {
    const adjust = (body: unknown) => admin.call("POST", `/admin/accounts/${accountId}/adjust`, { body });
    for (const bad of [{ usd: "0", note: "x" }, { usd: "-0.000000", note: "x" }, { usd: "1.0000001", note: "x" }, { usd: "1", note: "  " }, { usd: "abc", note: "x" }]) {
      expect((await adjust(bad)).status, JSON.stringify(bad)).toBe(400);
    }
    expect((await admin.call("POST", "/admin/accounts/acct_nobody/adjust", { body: { usd: "1", note: "x" } })).status).toBe(404);
    const answer = await adjust({ usd: "-0.960001", note: "wrong invoice" });
    expect(answer.status).toBe(200);
    expect(answer.body.balance.balanceUsd).toBe("3.999999");

    const { body } = await admin.call("GET", `/admin/accounts/${accountId}/statement?days=1`);
    expect(body.closingBalanceUsd).toBe("3.999999");
    expect(body.entries[0]).toMatchObject({ kind: "adjustment", amountUsd: "-0.960001", balanceAfterUsd: "3.999999", reason: `wrong invoice (by ${TEST_ADMIN.email})` });
    expect(body.entries.map((entry: { kind: string }) => entry.kind).filter((kind: string) => kind !== "reserve" && kind !== "release")).toEqual([
      "adjustment",
      "capture",
      "capture",
      "top_up",
    ]);
  });

  it("lists the account's usage for the admin and opens a failed request's detail with its job's error", async () => {
    const usage = await admin.call("GET", `/admin/accounts/${accountId}/usage?limit=10`);
    expect(usage.body.requests.map((row: { requestId: string }) => row.requestId).sort()).toEqual([...ids.ok, ids.failed].sort());
    const { body } = await admin.call("GET", `/admin/accounts/${accountId}/usage/${ids.failed}`);
    expect(body).toMatchObject({ requestId: ids.failed, status: "not_charged", size: "1024x1024", tier: "1K" });
    expect(body.job).toMatchObject({ channel: "sandbox", status: "failed", images: [] });
    expect(body.job.error.message).toContain("[sandbox:fail]");
    expect(body.job.latencyMs).toBeGreaterThanOrEqual(0);
    // Another account's request is not found through this account's page.
    const adminAccount = (await admin.call("GET", "/me")).body.account.id;
    expect((await admin.call("GET", `/admin/accounts/${adminAccount}/usage/${ids.failed}`)).status).toBe(404);
  });

  it("shows a request's latency, size and images while their links live, to its owner", async () => {
    const { body } = await user.call("GET", `/usage/${ids.ok[0]}`);
    expect(body).toMatchObject({ status: "charged", amountUsd: "0.020000", job: { channel: "sandbox", status: "succeeded", error: null } });
    expect(body.job.latencyMs).toBeGreaterThanOrEqual(0);
    expect(body.job.imageBytes).toBeGreaterThan(0);
    expect(body.job.images).toHaveLength(1);
    expect(body.job.images[0]).toMatchObject({ width: 1024, height: 1024 });
    const image = await fetch(body.job.images[0].url);
    expect(image.status).toBe(200);
    expect(image.headers.get("content-type")).toBe("image/png");
    expect((await image.arrayBuffer()).byteLength).toBe(body.job.imageBytes);
  });
});
