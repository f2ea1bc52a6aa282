import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code, ConnectError } from "@orvado/rpc";
import { create } from "@bufbuild/protobuf";
import { createLogger } from "@orvado/core";
import { AuthService, ErrorCode, VerifyKeyRequestSchema, type VerifyKeyResponse } from "@orvado/proto";
import { grpcJsClient } from "@orvado/testkit";
import { startTestAuth, TEST_SECRET, type TestAuth } from "./testing.ts";
import { KeyVerifier, REFUSALS } from "./verify.ts";

let auth: TestAuth;
let accountId: string;
beforeAll(async () => {
  auth = await startTestAuth();
  const { account } = await auth.client.createAccount({ email: "keys@example.com", password: "password-1" });
  accountId = account!.accountId;
});
afterAll(() => auth?.close());

function refusalOf(response: VerifyKeyResponse) {
  expect(response.result.case).toBe("refusal");
  return response.result.case === "refusal" ? response.result.value : undefined;
}

async function expectRefused(secret: string, code: ErrorCode, message: string) {
  const refusal = refusalOf(await auth.client.verifyKey({ secret }));
  expect(refusal?.code).toBe(code);
  expect(refusal?.message).toBe(message);
}

describe("CreateKey", () => {
  it("returns a td- secret once and the key without it", async () => {
    const { key, secret } = await auth.client.createKey({ accountId, name: "  laptop ", limitMicros: 5_000_000n, models: ["m-a", "m-b", "m-a"] });
    expect(secret).toMatch(/^td-[0-9A-Za-z]{43,}$/);
    expect(key?.keyId).toMatch(/^key_[A-Za-z0-9_-]+$/);
    expect(key?.accountId).toBe(accountId);
    expect(key?.name).toBe("laptop");
    expect(key?.limitMicros).toBe(5_000_000n);
    expect(key?.expiresAtUnixMs).toBeUndefined();
    expect(key?.models).toEqual(["m-a", "m-b"]);
    expect(key?.prefix).toBe(secret.slice(0, 7));
    expect(JSON.stringify(key, (_, value: unknown) => (typeof value === "bigint" ? String(value) : value))).not.toContain(
      secret.slice(7),
    );
  });

  it("defaults the name and leaves limit and expiry unset", async () => {
    const { key } = await auth.client.createKey({ accountId });
    expect(key?.name).toBe("default");
    expect(key?.limitMicros).toBeUndefined();
    expect(key?.models).toEqual([]);
  });

  it("stores only a SHA-256 hash of the secret", async () => {
    const { key, secret } = await auth.client.createKey({ accountId, name: "stored", expiresAtUnixMs: BigInt(Date.now() + 3_600_000) });
    const { rows } = await auth.db.query<{ row: string; secret_hash: string }>(
      "SELECT row_to_json(k)::text AS row, k.secret_hash FROM auth.api_keys k WHERE key_id = $1",
      [key!.keyId],
    );
    expect(rows[0]!.secret_hash).toBe(createHash("sha256").update(secret).digest("hex"));
    expect(rows[0]!.secret_hash).toMatch(/^[0-9a-f]{64}$/);
    // Neither the whole secret nor its undisplayed part appears anywhere in auth's tables.
    for (const table of ["auth.api_keys", "auth.accounts"]) {
      const dump = await auth.db.query<{ row: string }>(`SELECT row_to_json(t)::text AS row FROM ${table} t`);
      for (const { row } of dump.rows) {
        expect(row).not.toContain(secret);
        expect(row).not.toContain(secret.slice(7));
      }
    }
    expect(key?.expiresAtUnixMs).toBeGreaterThan(BigInt(Date.now()));
  });

  it("refuses bad input, unknown and disabled accounts", async () => {
    const cases: Array<[Parameters<TestAuth["client"]["createKey"]>[0], Code, RegExp]> = [
      [{ accountId: "" }, Code.InvalidArgument, /account_id is required/],
      [{ accountId, name: "x".repeat(101) }, Code.InvalidArgument, /at most 100/],
      [{ accountId, limitMicros: -1n }, Code.InvalidArgument, /must not be negative/],
      [{ accountId, expiresAtUnixMs: BigInt(Date.now() - 1) }, Code.InvalidArgument, /in the future/],
      [{ accountId, expiresAtUnixMs: 10n ** 15n }, Code.InvalidArgument, /too far/],
      [{ accountId, models: ["ok", " "] }, Code.InvalidArgument, /empty id/],
      [{ accountId: "acct_nobody" }, Code.NotFound, /no account/],
    ];
    for (const [request, code, message] of cases) {
      const error = await auth.client.createKey(request).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(ConnectError);
      expect([(error as ConnectError).code, (error as ConnectError).rawMessage]).toEqual([code, expect.stringMatching(message)]);
    }
    const { account } = await auth.client.createAccount({ email: "off@example.com", password: "password-1" });
    await auth.db.query("UPDATE auth.accounts SET disabled = true WHERE account_id = $1", [account!.accountId]);
    const error = await auth.client.createKey({ accountId: account!.accountId }).catch((caught: unknown) => caught);
    expect((error as ConnectError).code).toBe(Code.FailedPrecondition);
  });
});

describe("VerifyKey", () => {
  it("names the key and account of a valid secret", async () => {
    const { key, secret } = await auth.client.createKey({ accountId, limitMicros: 7n, models: ["m-1"] });
    const response = await auth.client.verifyKey({ secret });
    expect(response.result.case).toBe("key");
    if (response.result.case !== "key") return;
    expect(response.result.value).toMatchObject({ keyId: key!.keyId, accountId, limitMicros: 7n, models: ["m-1"] });

    const { key: unlimited, secret: other } = await auth.client.createKey({ accountId });
    const second = await auth.client.verifyKey({ secret: other });
    expect(second.result.case === "key" && second.result.value).toMatchObject({ keyId: unlimited!.keyId, models: [] });
    expect(second.result.case === "key" && second.result.value.limitMicros).toBeUndefined();
  });

  it("answers internal callers on plain @grpc/grpc-js", async () => {
    const { key, secret } = await auth.client.createKey({ accountId });
    const caller = grpcJsClient(AuthService, auth.url, TEST_SECRET);
    try {
      const valid = await caller.call<VerifyKeyResponse>("verifyKey", create(VerifyKeyRequestSchema, { secret }));
      expect(valid.result.case).toBe("key");
      expect(valid.result.value).toMatchObject({ keyId: key!.keyId, accountId });
      const missing = await caller.call<VerifyKeyResponse>("verifyKey", create(VerifyKeyRequestSchema, { secret: "" }));
      expect(missing.result).toMatchObject({ case: "refusal", value: { code: ErrorCode.MISSING_API_KEY, message: REFUSALS.missing } });
    } finally {
      caller.close();
    }
  });

  it("refuses missing, malformed and unknown secrets as values", async () => {
    await expectRefused("", ErrorCode.MISSING_API_KEY, REFUSALS.missing);
    for (const malformed of ["td-", "sk-abc", "td-short", `td-${"a".repeat(42)}!`, `td-${"a".repeat(44)}`, " td-x"]) {
      await expectRefused(malformed, ErrorCode.INVALID_API_KEY, REFUSALS.malformed);
    }
    await expectRefused(`td-${"a".repeat(43)}`, ErrorCode.INVALID_API_KEY, REFUSALS.unknown);
  });

  it("refuses revoked keys and keys of disabled accounts", async () => {
    const { key: revoked, secret: revokedSecret } = await auth.client.createKey({ accountId });
    await auth.db.query("UPDATE auth.api_keys SET revoked_at = now() WHERE key_id = $1", [revoked!.keyId]);
    await expectRefused(revokedSecret, ErrorCode.INVALID_API_KEY, REFUSALS.revoked);

    const { account } = await auth.client.createAccount({ email: "later-off@example.com", password: "password-1" });
    const { secret } = await auth.client.createKey({ accountId: account!.accountId });
    expect((await auth.client.verifyKey({ secret })).result.case).toBe("key");
    await auth.db.query("UPDATE auth.accounts SET disabled = true WHERE account_id = $1", [account!.accountId]);
    await expectRefused(secret, ErrorCode.INVALID_API_KEY, REFUSALS.disabled);
  });

  it("refuses a key once it has expired", async () => {
    const { secret } = await auth.client.createKey({ accountId, expiresAtUnixMs: BigInt(Date.now() + 1_000) });
    expect((await auth.client.verifyKey({ secret })).result.case).toBe("key");
    await new Promise((resolve) => setTimeout(resolve, 1_200));
    await expectRefused(secret, ErrorCode.INVALID_API_KEY, REFUSALS.expired);
  });

  it("records last use at most once a minute per key", async () => {
    const { key, secret } = await auth.client.createKey({ accountId });
    const lastUsed = async () =>
      (await auth.db.query<{ last_used_at: Date | null }>("SELECT last_used_at FROM auth.api_keys WHERE key_id = $1", [key!.keyId]))
        .rows[0]!.last_used_at;
    expect(await lastUsed()).toBeNull();
    await auth.client.verifyKey({ secret });
    expect(await lastUsed()).toBeInstanceOf(Date);
    // Cleared behind the service's back: within the minute, further verifications do not write.
    await auth.db.query("UPDATE auth.api_keys SET last_used_at = NULL WHERE key_id = $1", [key!.keyId]);
    for (let i = 0; i < 3; i++) expect((await auth.client.verifyKey({ secret })).result.case).toBe("key");
    expect(await lastUsed()).toBeNull();
  });

  it("writes last use again once the interval has passed", async () => {
    // A verifier on a clock the test moves, so the minute need not be waited out.
    let now = Date.now();
    const verifier = new KeyVerifier(auth.db, createLogger("auth-test", "silent"), { now: () => now });
    const { key, secret } = await auth.client.createKey({ accountId });
    const lastUsed = async () =>
      (await auth.db.query<{ last_used_at: Date | null }>("SELECT last_used_at FROM auth.api_keys WHERE key_id = $1", [key!.keyId]))
        .rows[0]!.last_used_at;
    await verifier.verify(secret);
    expect(await lastUsed()).toBeInstanceOf(Date);
    await auth.db.query("UPDATE auth.api_keys SET last_used_at = now() - interval '2 minutes' WHERE key_id = $1", [key!.keyId]);
    const stale = (await lastUsed())!;

    now += 59_000;
    await verifier.verify(secret);
    expect(await lastUsed()).toEqual(stale);

    now += 2_000;
    await verifier.verify(secret);
    expect((await lastUsed())!.getTime()).toBeGreaterThan(stale.getTime());
  });
});
