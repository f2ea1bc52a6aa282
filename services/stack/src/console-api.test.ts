import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestStack, TEST_ADMIN, type TestStack } from "./harness.ts";
import { ConsoleBrowser, signedIn } from "./console-browser.ts";

// The console API end to end over real HTTP: the edge, auth, billing and
// generation on their own ports in this process, calling each other in-process
// through their servers' interceptors; real PostgreSQL when TEST_DATABASE_URL is set.

let stack: TestStack;
let admin: ConsoleBrowser;
const REQUEST_ID = /^req_[A-Za-z0-9_-]{22}$/;
const ERROR_MESSAGE = / \(request id: req_[A-Za-z0-9_-]{22}\)$/;

beforeAll(async () => {
  stack = await startTestStack();
  admin = await signedIn(stack.edgeUrl, TEST_ADMIN.email, TEST_ADMIN.password);
});
afterAll(async () => {
  await stack?.close();
});

let counter = 0;
/** A new user account made through the admin API, topped up, and a browser signed in as it. */
async function newUser(usd = "5.00") {
  counter += 1;
  const email = `console-user-${counter}@example.test`;
  const password = "user-password-1";
  const created = await admin.call("POST", "/admin/accounts", { body: { email, password, role: "user" } });
  expect(created.status).toBe(201);
  const id = created.body.account.id as string;
  if (usd !== "0") expect((await admin.call("POST", `/admin/accounts/${id}/topup`, { body: { usd, note: "test" } })).status).toBe(200);
  return { id, email, password, browser: await signedIn(stack.edgeUrl, email, password) };
}

const generate = (key: string, body: Record<string, unknown> = { model: "beta", prompt: "a lighthouse", size: "1024x1024" }) =>
  fetch(`${stack.edgeUrl}/v1/images/generations`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });

// biome-ignore lint/suspicious/noExplicitAny: the test reads fields of a JSON answer whose shape it asserts
const json = (response: Response): Promise<any> => response.json();

async function settled(browser: ConsoleBrowser, requestId: string) {
  for (let attempt = 0; attempt < 200; attempt += 1) {
    const answer = await browser.call("GET", `/usage/${requestId}`);
    if (answer.status === 200 && answer.body.status !== "pending") return answer.body;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`${requestId} stayed pending`);
}

describe("session", () => {
  it("signs in with an HttpOnly SameSite=Lax cookie on /console, and /me answers with the same CSRF token", async () => {
    const browser = new ConsoleBrowser(stack.edgeUrl);
    const answer = await browser.signIn(` ${TEST_ADMIN.email.toUpperCase()}`, TEST_ADMIN.password);
    expect(answer.status).toBe(200);
    expect(answer.body.account).toMatchObject({ email: TEST_ADMIN.email, role: "admin", disabled: false });
    expect(answer.body.account.id).toMatch(/^acct_/);
    const cookie = answer.headers.getSetCookie().find((line) => line.startsWith("orvado_session="))!;
    expect(cookie).toMatch(/; Path=\/console(;|$)/);
    expect(cookie).toMatch(/; HttpOnly/);
    expect(cookie).toMatch(/; SameSite=Lax/);
    expect(cookie).not.toMatch(/; Secure/);
    const me = await browser.call("GET", "/me");
    expect(me.status).toBe(200);
    expect(me.body).toEqual({ account: answer.body.account, csrfToken: answer.body.csrfToken });
  });

  it("marks the cookie Secure when the request came through TLS (X-Forwarded-Proto: https)", async () => {
    const response = await fetch(`${stack.edgeUrl}/console/api/session`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-forwarded-proto": "https" },
      body: JSON.stringify({ email: TEST_ADMIN.email, password: TEST_ADMIN.password }),
    });
    expect(response.status).toBe(200);
    expect(response.headers.getSetCookie().find((line) => line.startsWith("orvado_session="))).toMatch(/; Secure/);
  });

  it("refuses a wrong password and an unknown email alike, and bad input in the documented error shape", async () => {
    const browser = new ConsoleBrowser(stack.edgeUrl);
    const wrong = await browser.signIn(TEST_ADMIN.email, "not-the-password");
    const unknown = await browser.signIn("nobody@example.test", "not-the-password");
    for (const answer of [wrong, unknown]) {
      expect(answer.status).toBe(401);
      expect(answer.body.error.code).toBe("invalid_credentials");
      expect(answer.body.error.type).toBe("gateway_error");
      expect(answer.body.error.message).toMatch(ERROR_MESSAGE);
      expect(answer.headers.get("x-request-id")).toMatch(REQUEST_ID);
    }
    expect(wrong.body.error.message.replace(ERROR_MESSAGE, "")).toBe(unknown.body.error.message.replace(ERROR_MESSAGE, ""));
    const missing = await browser.call("POST", "/session", { body: { email: "a@b.c" } });
    expect([missing.status, missing.body.error.code, missing.body.error.message]).toEqual([400, "missing_field", expect.stringMatching(/^password is required/)]);
    const extra = await browser.call("POST", "/session", { body: { email: "a@b.c", password: "x", admin: true } });
    expect([extra.status, extra.body.error.code]).toEqual([400, "unknown_field"]);
    const notJson = await fetch(`${stack.edgeUrl}/console/api/session`, { method: "POST", headers: { "content-type": "application/json" }, body: "{" });
    expect(notJson.status).toBe(400);
    expect((await json(notJson)).error.code).toBe("invalid_json");
  });

  it("answers 401 not_signed_in without a session and 404 for an unknown API path", async () => {
    const browser = new ConsoleBrowser(stack.edgeUrl);
    const me = await browser.call("GET", "/me");
    expect([me.status, me.body.error.code]).toEqual([401, "not_signed_in"]);
    const forged = await browser.call("GET", "/me", { cookie: `orvado_session=${"A".repeat(43)}` });
    expect([forged.status, forged.body.error.code]).toEqual([401, "not_signed_in"]);
    for (const method of ["GET", "POST", "DELETE"]) {
      const unknown = await admin.call(method, "/no-such-thing");
      expect([unknown.status, unknown.body.error.code]).toEqual([404, "not_found"]);
    }
  });

  it("signs out: the cookie is cleared and the session is gone on the server", async () => {
    const { browser } = await newUser("0");
    const saved = browser.cookie;
    const out = await browser.call("DELETE", "/session");
    expect(out.status).toBe(204);
    expect(browser.cookie).toBeNull();
    const replay = await browser.call("GET", "/me", { cookie: saved });
    expect([replay.status, replay.body.error.code]).toEqual([401, "not_signed_in"]);
  });

  it("changes the password, ending the account's other sessions but not this one", async () => {
    const user = await newUser("0");
    const other = await signedIn(stack.edgeUrl, user.email, user.password);
    const short = await user.browser.call("POST", "/password", { body: { currentPassword: user.password, newPassword: "short" } });
    expect([short.status, short.body.error.code]).toEqual([400, "invalid_field"]);
    const wrong = await user.browser.call("POST", "/password", { body: { currentPassword: "not-it-at-all", newPassword: "new-password-9" } });
    expect([wrong.status, wrong.body.error.code]).toEqual([401, "invalid_credentials"]);
    const changed = await user.browser.call("POST", "/password", { body: { currentPassword: user.password, newPassword: "new-password-9" } });
    expect(changed.status).toBe(204);
    expect((await user.browser.call("GET", "/me")).status).toBe(200);
    expect((await other.call("GET", "/me")).status).toBe(401);
    expect((await new ConsoleBrowser(stack.edgeUrl).signIn(user.email, "new-password-9")).status).toBe(200);
  });
});

describe("keys", () => {
  it("creates a key shown once, lists it without the secret, and the key generates images", async () => {
    const { browser } = await newUser();
    const expiresAt = new Date(Date.now() + 86_400_000).toISOString();
    const created = await browser.call("POST", "/keys", { body: { name: "laptop", limitUsd: "1.50", expiresAt, models: ["beta"] } });
    expect(created.status).toBe(201);
    expect(created.body.secret).toMatch(/^td-[0-9A-Za-z]{43}$/);
    expect(created.body.key).toMatchObject({
      name: "laptop",
      prefix: created.body.secret.slice(0, 7),
      limitUsd: "1.500000",
      expiresAt,
      revokedAt: null,
      lastUsedAt: null,
      spentUsd: "0.000000",
      heldUsd: "0.000000",
      models: ["beta"],
    });
    const listed = await browser.call("GET", "/keys");
    expect(listed.body.keys).toEqual([created.body.key]);
    expect(listed.text).not.toContain(created.body.secret.slice(7));

    const response = await generate(created.body.secret);
    expect(response.status).toBe(200);
    const requestId = response.headers.get("x-request-id")!;
    const cost = await settled(browser, requestId);
    expect(cost).toMatchObject({ requestId, status: "charged", model: "beta", tier: "1K", amountUsd: "0.020000", amountMicros: 20000, keyId: created.body.key.id, keyName: "laptop" });
    const after = (await browser.call("GET", "/keys")).body.keys[0];
    expect(after.spentUsd).toBe("0.020000");
    expect(after.lastUsedAt).not.toBeNull();
  });

  it("validates new keys: amounts, times, unknown models, names", async () => {
    const { browser } = await newUser("0");
    const cases: Array<[Record<string, unknown>, string, RegExp]> = [
      [{ name: "x", limitUsd: "-1" }, "invalid_field", /limitUsd/],
      [{ name: "x", limitUsd: "1.1234567" }, "invalid_field", /limitUsd/],
      [{ name: "x", expiresAt: "tomorrow" }, "invalid_field", /expiresAt/],
      [{ name: "x", expiresAt: new Date(Date.now() - 60_000).toISOString() }, "invalid_field", /in the future/],
      [{ name: "x", models: ["no-such-model"] }, "invalid_field", /no-such-model/],
      [{ name: "x".repeat(101) }, "invalid_field", /name/],
    ];
    for (const [body, code, message] of cases) {
      const answer = await browser.call("POST", "/keys", { body });
      expect([answer.status, answer.body.error.code, answer.body.error.message]).toEqual([400, code, expect.stringMatching(message)]);
    }
    // No name, or only spaces: the key is called "default", as the CLI names it.
    for (const body of [{}, { name: "  " }]) {
      const answer = await browser.call("POST", "/keys", { body });
      expect([answer.status, answer.body.key.name]).toEqual([201, "default"]);
    }
  });

  it("refuses a model outside the key's allowlist with 403 model_not_allowed", async () => {
    const { browser } = await newUser();
    const { secret } = (await browser.call("POST", "/keys", { body: { name: "beta only", models: ["beta"] } })).body;
    const refused = await generate(secret, { model: "beta-pro", prompt: "a cat", size: "1024x1024" });
    expect(refused.status).toBe(403);
    const body = await json(refused);
    expect(body.error).toMatchObject({ code: "model_not_allowed", type: "gateway_error" });
    expect(body.error.message).toMatch(ERROR_MESSAGE);
  });

  it("revokes a key: 2 seconds later the same edge, which had it cached, refuses it with 401", async () => {
    const { browser } = await newUser();
    const { key, secret } = (await browser.call("POST", "/keys", { body: { name: "to revoke" } })).body;
    expect((await generate(secret)).status).toBe(200); // now in the edge's key cache
    const revoked = await browser.call("DELETE", `/keys/${key.id}`);
    expect(revoked.status).toBe(200);
    expect(revoked.body.key.revokedAt).not.toBeNull();
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const refused = await generate(secret);
    expect(refused.status).toBe(401);
    expect((await json(refused)).error.message).toMatch(/^The API key has been revoked/);
    const missing = await browser.call("DELETE", "/keys/key_does_not_exist");
    expect([missing.status, missing.body.error.code]).toEqual([404, "not_found"]);
  });

  it("says why a key is refused: missing, malformed, unknown, expired, disabled account", async () => {
    const user = await newUser();
    const expiring = (await user.browser.call("POST", "/keys", { body: { name: "short-lived", expiresAt: new Date(Date.now() + 1500).toISOString() } })).body;
    const message = async (response: Response) => [response.status, (await json(response)).error.message];
    const missing = await fetch(`${stack.edgeUrl}/v1/images/generations`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    expect(await message(missing)).toEqual([401, expect.stringMatching(/^No token was provided/)]);
    expect(await message(await generate("td-short"))).toEqual([401, expect.stringMatching(/^The API key is malformed/)]);
    expect(await message(await generate(`td-${"a".repeat(43)}`))).toEqual([401, expect.stringMatching(/^The API key is not recognised/)]);
    await new Promise((resolve) => setTimeout(resolve, 2000));
    expect(await message(await generate(expiring.secret))).toEqual([401, expect.stringMatching(/^The API key has expired/)]);

    const { secret } = (await user.browser.call("POST", "/keys", { body: { name: "live" } })).body;
    expect((await admin.call("POST", `/admin/accounts/${user.id}/disable`)).body.account.disabled).toBe(true);
    expect(await message(await generate(secret))).toEqual([401, expect.stringMatching(/^The account is disabled/)]);
    expect((await user.browser.call("GET", "/me")).status).toBe(401);
    expect((await new ConsoleBrowser(stack.edgeUrl).signIn(user.email, user.password)).body.error.code).toBe("account_disabled");
    expect((await admin.call("POST", `/admin/accounts/${user.id}/enable`)).body.account.disabled).toBe(false);
    await new Promise((resolve) => setTimeout(resolve, 1100)); // past the edge's 1 s key cache
    expect((await generate(secret)).status).toBe(200);
  });
});

describe("money and usage", () => {
  it("shows balance, spend per day, usage pages with filters, one request, and the CSV export", async () => {
    const { browser } = await newUser("2.00");
    const a = (await browser.call("POST", "/keys", { body: { name: "key, \"A\"" } })).body;
    const b = (await browser.call("POST", "/keys", { body: { name: "=B" } })).body;
    const ids: string[] = [];
    for (const [key, model] of [[a.secret, "beta"], [b.secret, "beta-2-lite"], [a.secret, "beta"]] as const) {
      const response = await generate(key, { model, prompt: "usage", size: "1024x1024" });
      expect(response.status).toBe(200);
      ids.push(response.headers.get("x-request-id")!);
    }
    for (const id of ids) await settled(browser, id);

    const balance = (await browser.call("GET", "/balance")).body;
    expect(balance).toEqual({
      balanceUsd: "1.950000",
      heldUsd: "0.000000",
      availableUsd: "1.950000",
      balanceMicros: 1_950_000,
      heldMicros: 0,
      availableMicros: 1_950_000,
    });
    const spend = (await browser.call("GET", "/spend?days=7")).body.days;
    expect(spend).toHaveLength(7);
    expect(spend[6]).toEqual({ date: new Date().toISOString().slice(0, 10), usd: "0.050000", micros: 50_000, requests: 3, notCharged: 0, pending: 0 });
    expect(spend[0]).toMatchObject({ usd: "0.000000", requests: 0 });

    const all = (await browser.call("GET", "/usage")).body;
    expect(all.requests.map((row: { requestId: string }) => row.requestId)).toEqual([...ids].reverse());
    expect(all.nextCursor).toBeNull();
    const first = (await browser.call("GET", "/usage?limit=2")).body;
    expect(first.requests).toHaveLength(2);
    const second = (await browser.call("GET", `/usage?limit=2&cursor=${encodeURIComponent(first.nextCursor)}`)).body;
    expect(second.requests.map((row: { requestId: string }) => row.requestId)).toEqual([ids[0]]);
    const byKey = (await browser.call("GET", `/usage?keyId=${b.key.id}`)).body.requests;
    expect(byKey).toHaveLength(1);
    expect(byKey[0]).toMatchObject({ model: "beta-2-lite", keyName: "=B", amountUsd: "0.010000" });
    expect((await browser.call("GET", "/usage?model=beta")).body.requests).toHaveLength(2);
    const today = new Date().toISOString().slice(0, 10);
    expect((await browser.call("GET", `/usage?from=${today}&to=${today}`)).body.requests).toHaveLength(3);
    expect((await browser.call("GET", "/usage?to=2000-01-01")).body.requests).toHaveLength(0);
    for (const bad of ["limit=0", "limit=201", "from=yesterday", "colour=red"]) {
      const answer = await browser.call("GET", `/usage?${bad}`);
      expect(answer.status).toBe(400);
    }

    const csv = await browser.call("GET", "/usage.csv");
    expect(csv.status).toBe(200);
    expect(csv.headers.get("content-type")).toMatch(/^text\/csv/);
    expect(csv.headers.get("content-disposition")).toMatch(/^attachment; filename=/);
    const lines = csv.text.trim().split("\r\n");
    expect(lines[0]).toBe("requestId,createdAt,settledAt,model,size,tier,status,imagesRequested,imagesDelivered,amountUsd,amountMicros,keyId,keyName,user");
    expect(lines).toHaveLength(4);
    expect(lines[1]).toContain(`"key, ""A"""`);
    expect(csv.text).toContain(",'=B");
  });

  it("runs the playground as the account under its own playground key id, with the cost in the answer", async () => {
    const { browser } = await newUser("1.00");
    const answer = await browser.call("POST", "/playground", { body: { model: "beta", prompt: "a boat", size: "1024x1024" } });
    expect(answer.status).toBe(200);
    expect(answer.body.requestId).toMatch(REQUEST_ID);
    expect(answer.headers.get("x-request-id")).toBe(answer.body.requestId);
    expect(answer.body.data[0].url).toMatch(new RegExp(`^${stack.edgeUrl}/v1/files/`));
    expect((await fetch(answer.body.data[0].url)).status).toBe(200);
    expect(answer.body.cost).toMatchObject({ requestId: answer.body.requestId, keyId: `console-${(await browser.call("GET", "/me")).body.account.id}`, model: "beta", amountUsd: expect.any(String) });
    const cost = await settled(browser, answer.body.requestId);
    expect(cost).toMatchObject({ status: "charged", amountUsd: "0.020000", keyName: "console playground" });
    const bad = await browser.call("POST", "/playground", { body: { model: "nope", prompt: "x" } });
    expect([bad.status, bad.body.error.code]).toEqual([400, "unknown_model"]);
  });

  it("lists models with their prices per tier and whether they edit", async () => {
    const { browser } = await newUser("0");
    const { models } = (await browser.call("GET", "/models")).body;
    expect(models.find((model: { id: string }) => model.id === "alpha-2.5-flare").edits).toBe(true);
    expect(models.find((model: { id: string }) => model.id === "beta")).toEqual({
      id: "beta",
      aliases: [],
      family: "beta",
      tiers: ["1K", "2K"],
      edits: false,
      sandbox: true,
      prices: { "1K": "0.020000", "2K": "0.040000" },
    });
  });
});

describe("admin", () => {
  it("lists accounts with balances, refuses a taken email, and tops up only accounts that exist", async () => {
    const user = await newUser("3.25");
    const { accounts } = (await admin.call("GET", "/admin/accounts")).body;
    expect(accounts.find((account: { id: string }) => account.id === user.id)).toMatchObject({
      email: user.email,
      role: "user",
      disabled: false,
      balanceUsd: "3.250000",
      createdAt: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/),
    });
    const taken = await admin.call("POST", "/admin/accounts", { body: { email: user.email.toUpperCase(), password: "password-123", role: "user" } });
    expect([taken.status, taken.body.error.code]).toEqual([409, "account_exists"]);
    const badRole = await admin.call("POST", "/admin/accounts", { body: { email: "x@example.test", password: "password-123", role: "root" } });
    expect([badRole.status, badRole.body.error.code]).toEqual([400, "invalid_field"]);
    const topUp = await admin.call("POST", `/admin/accounts/${user.id}/topup`, { body: { usd: "0.75", note: "bonus" } });
    expect(topUp.body.balance).toMatchObject({ balanceUsd: "4.000000", availableMicros: 4_000_000 });
    const nobody = await admin.call("POST", "/admin/accounts/acct_nobody/topup", { body: { usd: "1", note: "x" } });
    expect([nobody.status, nobody.body.error.code]).toEqual([404, "not_found"]);
    const zero = await admin.call("POST", `/admin/accounts/${user.id}/topup`, { body: { usd: "0", note: "x" } });
    expect([zero.status, zero.body.error.code]).toEqual([400, "invalid_field"]);
  });

  it("changes a price, which shows in the change log and in the models' prices", async () => {
    const changed = await admin.call("PUT", "/admin/prices", { body: { model: "beta-2-lite", tier: "1K", usd: "0.015", note: "raise" } });
    expect(changed.status).toBe(200);
    expect(changed.body.price).toEqual({ model: "beta-2-lite", tier: "1K", usd: "0.015000", micros: 15_000 });
    expect(changed.body.change).toMatchObject({ model: "beta-2-lite", tier: "1K", oldUsd: "0.010000", newUsd: "0.015000", actor: TEST_ADMIN.email, note: "raise" });
    const listed = (await admin.call("GET", "/admin/prices")).body;
    expect(listed.prices).toContainEqual({ model: "beta-2-lite", tier: "1K", usd: "0.015000", micros: 15_000 });
    expect(listed.changes[0]).toMatchObject({ model: "beta-2-lite", newUsd: "0.015000" });
    const models = (await admin.call("GET", "/models")).body.models;
    expect(models.find((model: { id: string }) => model.id === "beta-2-lite").prices).toEqual({ "1K": "0.015000" });
    const bad = await admin.call("PUT", "/admin/prices", { body: { model: "beta", tier: "8K", usd: "1" } });
    expect([bad.status, bad.body.error.code]).toEqual([400, "invalid_field"]);
  });

  it("lists models with their channels", async () => {
    const { models } = (await admin.call("GET", "/admin/models")).body;
    expect(models.find((model: { id: string }) => model.id === "beta").channels).toEqual([{ name: "sandbox", provider: "sandbox", healthy: true }]);
  });

  it("will not let an admin disable their own account", async () => {
    const me = (await admin.call("GET", "/me")).body.account;
    const answer = await admin.call("POST", `/admin/accounts/${me.id}/disable`);
    expect(answer.status).toBe(400);
  });
});
