import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createLogger } from "@orvado/core";
import { Code, ConnectError } from "@orvado/rpc";
import { startTestAuth, type TestAuth } from "./testing.ts";

// Over HTTP/2 (Connect) on a fresh database: the admin created at first start with a generated
// password is marked so (the console asks for a new password) until the password is changed;
// accounts are found by email (GetAccount) and listed by a part of it (ListAccounts).

let auth: TestAuth;
let generatedPassword: string;
const logger = createLogger("auth-test", "silent");
const warn = vi.spyOn(logger, "warn");

beforeAll(async () => {
  auth = await startTestAuth({ logger, config: { adminEmail: undefined, adminPassword: undefined }, transport: "http2" });
  const line = warn.mock.calls.map((call) => String(call[0])).find((text) => text.includes("generated password"))!;
  generatedPassword = /generated password (\S+)/.exec(line)![1]!;
});
afterAll(() => auth?.close());

describe("the generated admin password", () => {
  it("is flagged on the account, in GetAccount and in the session, until the admin changes it", async () => {
    const { account } = await auth.client.getAccount({ email: "Admin@Orvado.Local" });
    expect(account).toMatchObject({ email: "admin@orvado.local", passwordGenerated: true });

    const signIn = await auth.client.signIn({ email: "admin@orvado.local", password: generatedPassword, clientIp: "127.0.0.1" });
    if (signIn.result.case !== "signedIn") throw new Error("sign-in refused");
    const token = signIn.result.value.sessionToken;
    expect(signIn.result.value.session!.account!.passwordGenerated).toBe(true);

    const changed = await auth.client.changePassword({ sessionToken: token, currentPassword: generatedPassword, newPassword: "a password I chose" });
    expect(changed.refusal).toBeUndefined();
    expect((await auth.client.getAccount({ accountId: account!.accountId })).account!.passwordGenerated).toBe(false);
    const session = await auth.client.getSession({ sessionToken: token });
    expect(session.result.case === "session" && session.result.value.account!.passwordGenerated).toBe(false);
  });

  it("is never set on accounts created with a password", async () => {
    const { account } = await auth.client.createAccount({ email: "chosen@example.test", password: "chosen-password" });
    expect(account!.passwordGenerated).toBe(false);
  });
});

describe("finding accounts by email", () => {
  it("GetAccount by exact email; an unknown one is NOT_FOUND", async () => {
    const { account } = await auth.client.createAccount({ email: "find.me@example.test", password: "password-1" });
    expect((await auth.client.getAccount({ email: " FIND.ME@example.test " })).account!.accountId).toBe(account!.accountId);
    const error = await auth.client.getAccount({ email: "find@example.test" }).catch((caught: unknown) => caught);
    expect(error instanceof ConnectError && error.code).toBe(Code.NotFound);
  });

  it("ListAccounts keeps the accounts whose email contains the text, case-insensitively, and treats % and _ literally", async () => {
    await auth.client.createAccount({ email: "list-one@shop.example", password: "password-1" });
    await auth.client.createAccount({ email: "list-two@shop.example", password: "password-1" });
    const emails = async (emailContains: string) => (await auth.client.listAccounts({ emailContains })).accounts.map((account) => account.email);
    expect(await emails("SHOP.example")).toEqual(["list-one@shop.example", "list-two@shop.example"]);
    expect(await emails("two@")).toEqual(["list-two@shop.example"]);
    expect(await emails("%")).toEqual([]);
    expect(await emails("_")).toEqual([]);
    expect((await emails("")).length).toBeGreaterThanOrEqual(3);
  });
});
