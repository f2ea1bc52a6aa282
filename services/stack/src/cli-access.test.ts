import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runOrvado, startTestStack, type TestStack } from "./harness.ts";

// The operator's key and account controls: the real `orvado` CLI against the real services.

let stack: TestStack;

const orvado = (...argv: string[]) => runOrvado(stack, ...argv);

const generate = (key: string) =>
  fetch(`${stack.edgeUrl}/v1/images/generations`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "beta-2-lite", prompt: "a key test", size: "1024x1024" }),
  });

const pastKeyCache = () => new Promise((resolve) => setTimeout(resolve, 1100));

beforeAll(async () => {
  stack = await startTestStack();
});
afterAll(async () => {
  await stack?.close();
});

describe("orvado keys list / revoke and accounts disable / enable", () => {
  it("lists keys without secrets, revokes one, and switches an account off and on", async () => {
    const accountId = (await orvado("accounts", "create", "--email", "ops@example.test", "--password", "a long password")).json.account_id;
    await orvado("accounts", "topup", "--account", accountId, "--usd", "1");
    const first = (await orvado("keys", "create", "--account", accountId, "--name", "first")).json;
    const second = (await orvado("keys", "create", "--account", accountId, "--name", "second", "--models", "beta-2-lite")).json;

    const listed = await orvado("keys", "list", "--account", accountId);
    expect(listed.code).toBe(0);
    expect(listed.json.keys.map((key: { name: string }) => key.name)).toEqual(["second", "first"]);
    expect(listed.json.keys[0]).toMatchObject({ key_id: second.key_id, prefix: second.key.slice(0, 7), models: ["beta-2-lite"], revoked_at: null });
    expect(JSON.stringify(listed.json)).not.toContain(first.key.slice(7));

    expect((await generate(first.key)).status).toBe(200);
    const revoked = await orvado("keys", "revoke", "--account", accountId, "--key", first.key_id);
    expect(revoked.code).toBe(0);
    expect(revoked.json.revoked_at).toMatch(/^\d{4}-/);
    await pastKeyCache();
    expect((await generate(first.key)).status).toBe(401);

    const other = await orvado("keys", "revoke", "--account", "acct_someone_else", "--key", second.key_id);
    expect(other.code).toBe(1);
    expect(other.stderr).toMatch(/not found|no key/i);
    expect((await orvado("keys", "list", "--account", "acct_nobody")).code).toBe(1);

    const off = await orvado("accounts", "disable", "--account", accountId);
    expect(off.json).toMatchObject({ account_id: accountId, disabled: true });
    await pastKeyCache();
    expect((await generate(second.key)).status).toBe(401);
    const on = await orvado("accounts", "enable", "--account", accountId);
    expect(on.json.disabled).toBe(false);
    await pastKeyCache();
    expect((await generate(second.key)).status).toBe(200);
  });
});
