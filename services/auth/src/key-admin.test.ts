import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code, ConnectError } from "@orvado/rpc";
import { ErrorCode, Role } from "@orvado/proto";
import { startTestAuth, type TestAuth } from "./testing.ts";
import { REFUSALS } from "./verify.ts";

let auth: TestAuth;
beforeAll(async () => {
  auth = await startTestAuth();
});
afterAll(() => auth?.close());

async function account(email: string) {
  const { account: created } = await auth.client.createAccount({ email, password: "password-1", role: Role.USER });
  return created!.accountId;
}

const codeOf = async (call: Promise<unknown>) => ((await call.then(() => null, (e: unknown) => e)) as ConnectError).code;

describe("ListKeys and RevokeKey", () => {
  it("list one account's keys newest first, with revocation and last use", async () => {
    const alice = await account("list-alice@example.com");
    const bob = await account("list-bob@example.com");
    const first = await auth.client.createKey({ accountId: alice, name: "first", models: ["beta"] });
    await auth.client.createKey({ accountId: alice, name: "second", limitMicros: 3n });
    await auth.client.createKey({ accountId: bob, name: "bob's" });
    await auth.client.verifyKey({ secret: first.secret });

    const { keys } = await auth.client.listKeys({ accountId: alice });
    expect(keys.map((key) => key.name)).toEqual(["second", "first"]);
    expect(keys[1]).toMatchObject({ keyId: first.key!.keyId, models: ["beta"], prefix: first.secret.slice(0, 7) });
    expect(keys[1]!.lastUsedAtUnixMs).toBeGreaterThan(0n);
    expect(keys[0]!.lastUsedAtUnixMs).toBeUndefined();
    expect(keys[0]!.limitMicros).toBe(3n);
    expect(JSON.stringify(keys, (_, v: unknown) => (typeof v === "bigint" ? String(v) : v))).not.toContain(first.secret.slice(7));
    expect((await auth.client.listKeys({ accountId: "" })).keys).toEqual([]);
  });

  it("revoke a key of the account at once, keep the first revocation time, and treat another account's key as unknown", async () => {
    const alice = await account("revoke-alice@example.com");
    const bob = await account("revoke-bob@example.com");
    const { key, secret } = await auth.client.createKey({ accountId: alice });

    expect(await codeOf(auth.client.revokeKey({ accountId: bob, keyId: key!.keyId }))).toBe(Code.NotFound);
    expect((await auth.client.verifyKey({ secret })).result.case).toBe("key");

    const revoked = await auth.client.revokeKey({ accountId: alice, keyId: key!.keyId });
    expect(revoked.key?.revokedAtUnixMs).toBeGreaterThan(0n);
    const again = await auth.client.revokeKey({ accountId: alice, keyId: key!.keyId });
    expect(again.key?.revokedAtUnixMs).toBe(revoked.key?.revokedAtUnixMs);
    const answer = await auth.client.verifyKey({ secret });
    expect(answer.result).toMatchObject({ case: "refusal", value: { code: ErrorCode.INVALID_API_KEY, message: REFUSALS.revoked } });
    expect(await codeOf(auth.client.revokeKey({ accountId: alice, keyId: "key_nothing" }))).toBe(Code.NotFound);
  });
});

describe("ListAccounts and SetAccountDisabled", () => {
  it("list every account oldest first and switch one off and on, which its keys follow", async () => {
    const carol = await account("carol@example.com");
    const { secret } = await auth.client.createKey({ accountId: carol });
    const { accounts } = await auth.client.listAccounts({});
    expect(accounts[0]!.email).toBe("root@example.test");
    expect(accounts.map((a) => a.accountId)).toContain(carol);

    const off = await auth.client.setAccountDisabled({ accountId: carol, disabled: true });
    expect(off.account?.disabled).toBe(true);
    expect((await auth.client.verifyKey({ secret })).result).toMatchObject({ case: "refusal", value: { message: REFUSALS.disabled } });
    const on = await auth.client.setAccountDisabled({ accountId: carol, disabled: false });
    expect(on.account?.disabled).toBe(false);
    expect((await auth.client.verifyKey({ secret })).result.case).toBe("key");
    expect(await codeOf(auth.client.setAccountDisabled({ accountId: "acct_nobody", disabled: true }))).toBe(Code.NotFound);
  });
});
