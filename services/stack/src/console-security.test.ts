import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestStack, TEST_ADMIN, type TestStack } from "./harness.ts";
import { ConsoleBrowser, signedIn } from "./console-browser.ts";

// Sign-in rate limiting over HTTP, and what the database keeps of secrets. The
// stack runs with small limits (3 failures per account, 8 per address per window)
// so the test reaches them quickly; the defaults are 10 and 50 per 15 minutes.

let stack: TestStack;
let admin: ConsoleBrowser;

beforeAll(async () => {
  stack = await startTestStack({ AUTH_SIGNIN_MAX_FAILURES_PER_ACCOUNT: "3", AUTH_SIGNIN_MAX_FAILURES_PER_IP: "8" });
  admin = await signedIn(stack.edgeUrl, TEST_ADMIN.email, TEST_ADMIN.password);
});
afterAll(async () => {
  await stack?.close();
});

async function newUser(email: string) {
  const created = await admin.call("POST", "/admin/accounts", { body: { email, password: "user-password-1", role: "user" } });
  expect(created.status).toBe(201);
  return created.body.account.id as string;
}

describe("the database", () => {
  it("keeps only hashes of API keys and session tokens", async () => {
    await newUser("hashes@example.test");
    const user = await signedIn(stack.edgeUrl, "hashes@example.test", "user-password-1");
    const { secret } = (await user.call("POST", "/keys", { body: { name: "hashed" } })).body;
    const token = user.sessionToken!;
    expect(secret).toMatch(/^td-/);
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const tables = await stack.db.query<{ table_name: string }>(
      "SELECT table_name FROM information_schema.tables WHERE table_schema = 'auth' AND table_type = 'BASE TABLE'",
    );
    expect(tables.rows.map((row) => row.table_name)).toEqual(expect.arrayContaining(["api_keys", "sessions", "accounts"]));
    for (const { table_name } of tables.rows) {
      const dump = await stack.db.query<{ row: string }>(`SELECT row_to_json(t)::text AS row FROM auth.${table_name} t`);
      for (const { row } of dump.rows) {
        for (const secretPart of [secret, secret.slice(3), token, user.csrfToken!, "user-password-1"]) expect(row).not.toContain(secretPart);
      }
    }
    const sessions = await stack.db.query<{ token_hash: string }>("SELECT token_hash FROM auth.sessions");
    expect(sessions.rows.length).toBeGreaterThan(0);
    for (const { token_hash } of sessions.rows) expect(token_hash).toMatch(/^[0-9a-f]{64}$/);
    const keys = await stack.db.query<{ secret_hash: string }>("SELECT secret_hash FROM auth.api_keys");
    for (const { secret_hash } of keys.rows) expect(secret_hash).toMatch(/^[0-9a-f]{64}$/);
  });
});

describe("sign-in rate limiting", () => {
  it("answers 429 too_many_attempts with Retry-After once an account has used up its failures, even for the right password", async () => {
    await newUser("limited@example.test");
    const browser = new ConsoleBrowser(stack.edgeUrl);
    for (let attempt = 0; attempt < 3; attempt += 1) {
      expect((await browser.signIn("limited@example.test", "wrong-password")).status).toBe(401);
    }
    for (const password of ["wrong-password", "user-password-1"]) {
      const blocked = await browser.signIn("limited@example.test", password);
      expect([blocked.status, blocked.body.error.code, blocked.body.error.type]).toEqual([429, "too_many_attempts", "gateway_error"]);
      const retryAfter = Number(blocked.headers.get("retry-after"));
      expect(retryAfter).toBeGreaterThan(0);
      expect(retryAfter).toBeLessThanOrEqual(15 * 60);
      expect(blocked.headers.get("set-cookie")).toBeNull();
    }
    // Another account from the same address is not locked by this one.
    expect((await browser.signIn(TEST_ADMIN.email, TEST_ADMIN.password)).status).toBe(200);
  });

  it("answers 429 to an address that has used up its failures across many emails", async () => {
    const browser = new ConsoleBrowser(stack.edgeUrl);
    // 3 failures so far came from this address (the test above); 5 more reach the limit of 8.
    for (let attempt = 0; attempt < 5; attempt += 1) {
      expect((await browser.signIn(`spray-${attempt}@example.test`, "guess-guess")).status).toBe(401);
    }
    const blocked = await browser.signIn(TEST_ADMIN.email, TEST_ADMIN.password);
    expect([blocked.status, blocked.body.error.code]).toEqual([429, "too_many_attempts"]);
    expect(Number(blocked.headers.get("retry-after"))).toBeGreaterThan(0);
    // Sessions already open are not affected: the limit guards password guessing only.
    expect((await admin.call("GET", "/me")).status).toBe(200);
  });
});
