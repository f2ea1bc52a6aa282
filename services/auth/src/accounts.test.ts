import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code, ConnectError, internalClient } from "@orvado/rpc";
import { create } from "@bufbuild/protobuf";
import { AuthService, Role, VerifyKeyRequestSchema, health } from "@orvado/proto";
import { grpcJsClient } from "@orvado/testkit";
import { startTestAuth, TEST_SECRET, type TestAuth } from "./testing.ts";
import { verifyPassword } from "./passwords.ts";

let auth: TestAuth;
beforeAll(async () => {
  auth = await startTestAuth();
});
afterAll(() => auth?.close());

async function rpcCode(call: Promise<unknown>): Promise<Code> {
  const error = await call.then(
    () => null,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(ConnectError);
  return (error as ConnectError).code;
}

describe("accounts", () => {
  it("are created with a normalised email and the user role by default, and read back", async () => {
    const { account } = await auth.client.createAccount({ email: "  Alice@Example.COM ", password: "password-1" });
    expect(account?.accountId).toMatch(/^acct_[A-Za-z0-9_-]+$/);
    expect(account?.email).toBe("alice@example.com");
    expect(account?.role).toBe(Role.USER);
    expect(account?.disabled).toBe(false);
    expect(Number(account?.createdAtUnixMs)).toBeGreaterThan(Date.now() - 60_000);

    const read = await auth.client.getAccount({ accountId: account!.accountId });
    expect(read.account).toEqual(account);
  });

  it("store only a scrypt hash of the password", async () => {
    const { account } = await auth.client.createAccount({ email: "hash@example.com", password: "my secret words", role: Role.ADMIN });
    expect(account?.role).toBe(Role.ADMIN);
    const { rows } = await auth.db.query<{ password_hash: string }>(
      "SELECT password_hash FROM auth.accounts WHERE account_id = $1",
      [account!.accountId],
    );
    const stored = rows[0]!.password_hash;
    expect(stored).toMatch(/^scrypt\$32768\$8\$1\$[A-Za-z0-9+/=]+\$[A-Za-z0-9+/=]+$/);
    expect(stored).not.toContain("my secret words");
    expect(await verifyPassword("my secret words", stored)).toBe(true);
  });

  it("refuse a second account with the same email, whatever its case", async () => {
    await auth.client.createAccount({ email: "bob@example.com", password: "password-1" });
    expect(await rpcCode(auth.client.createAccount({ email: "BOB@example.com", password: "password-2" }))).toBe(
      Code.AlreadyExists,
    );
  });

  it("refuse bad input with a message saying what is wrong", async () => {
    const cases: Array<[{ email: string; password: string; role?: Role }, RegExp]> = [
      [{ email: "", password: "password-1" }, /email is required/],
      [{ email: "not-an-email", password: "password-1" }, /not a valid address/],
      [{ email: "a b@example.com", password: "password-1" }, /not a valid address/],
      [{ email: `${"x".repeat(250)}@example.com`, password: "password-1" }, /at most 254/],
      [{ email: "short@example.com", password: "1234567" }, /at least 8/],
      [{ email: "long@example.com", password: "x".repeat(1025) }, /at most 1024/],
      [{ email: "role@example.com", password: "password-1", role: 7 as Role }, /not a known role/],
    ];
    for (const [request, message] of cases) {
      const error = await auth.client.createAccount(request).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(ConnectError);
      expect((error as ConnectError).code).toBe(Code.InvalidArgument);
      expect((error as ConnectError).rawMessage).toMatch(message);
    }
  });

  it("answer NotFound for an unknown id", async () => {
    expect(await rpcCode(auth.client.getAccount({ accountId: "acct_nobody" }))).toBe(Code.NotFound);
    expect(await rpcCode(auth.client.getAccount({ accountId: "" }))).toBe(Code.NotFound);
  });
});

describe("the rpc server", () => {
  it("refuses calls without the shared secret as UNAUTHENTICATED (grpc status 16)", async () => {
    for (const secret of [undefined, "wrong-secret-0123456789"]) {
      const caller = grpcJsClient(AuthService, auth.url, secret);
      try {
        const error = await caller.call("verifyKey", create(VerifyKeyRequestSchema, { secret: "td-x" })).catch((caught: { code?: number }) => caught);
        expect((error as { code?: number }).code).toBe(16);
      } finally {
        caller.close();
      }
    }
    const wrong = internalClient(AuthService, auth.url, "wrong-secret-0123456789");
    expect(await rpcCode(wrong.getAccount({ accountId: "acct_x" }))).toBe(Code.Unauthenticated);
  });

  it("answers health checks for AuthService, with or without the secret", async () => {
    const { HealthCheckResponse_ServingStatus: Status } = health;
    const connect = internalClient(health.Health, auth.url, TEST_SECRET);
    expect((await connect.check({ service: "orvado.v1.AuthService" })).status).toBe(Status.SERVING);
    const probe = grpcJsClient(health.Health, auth.url);
    try {
      const answer = await probe.call<{ status: number }>("check", create(health.HealthCheckRequestSchema, { service: "orvado.v1.AuthService" }));
      expect(answer.status).toBe(Status.SERVING);
    } finally {
      probe.close();
    }
  });
});
