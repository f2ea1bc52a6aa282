import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Role } from "@orvado/proto";
import { FAKE_SECRET, KNOWN_ACCOUNT, KNOWN_REQUEST, PENDING_REQUEST, run, startFakeServices, type FakeServices } from "./fake-services.ts";

// Auth and billing are separate fakes so each call is seen to go to the right URL.
let auth: FakeServices;
let billing: FakeServices;

beforeAll(async () => {
  [auth, billing] = await Promise.all([startFakeServices(), startFakeServices()]);
});
afterAll(async () => {
  await Promise.all([auth.close(), billing.close()]);
});

const env = () => ({
  ORVADO_AUTH_URL: auth.server.url,
  ORVADO_BILLING_URL: billing.server.url,
  ORVADO_INTERNAL_SECRET: FAKE_SECRET,
});

describe("accounts", () => {
  it("create sends the email, password and user role, and prints the account", async () => {
    const result = await run(["accounts", "create", "--email", "ann@example.com", "--password", "pw 1234 long"], env());
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    const request = auth.recorded.createAccount.at(-1)!;
    expect([request.email, request.password, request.role]).toEqual(["ann@example.com", "pw 1234 long", Role.USER]);
    expect(result.stdout.endsWith("}\n")).toBe(true);
    expect(result.json()).toEqual({ account_id: expect.stringMatching(/^acct_/), email: "ann@example.com", role: "user" });
    expect(Object.keys(result.json())).toEqual(["account_id", "email", "role"]);
  });

  it("create --admin asks for the admin role", async () => {
    const result = await run(["accounts", "create", "--email", "root@example.com", "--password", "pw", "--admin"], env());
    expect(result.code).toBe(0);
    expect(auth.recorded.createAccount.at(-1)!.role).toBe(Role.ADMIN);
    expect(result.json().role).toBe("admin");
  });

  it("topup sends exact micros with a fresh top-up id each time, and prints the balance", async () => {
    const first = await run(["accounts", "topup", "--account", "acct_fresh", "--usd", "12.50", "--note", "welcome"], env());
    expect(first.stderr).toBe("");
    expect(first.code).toBe(0);
    const request = billing.recorded.topUp.at(-1)!;
    expect(request.amountMicros).toBe(12_500_000n);
    expect([request.accountId, request.note]).toEqual(["acct_fresh", "welcome"]);
    expect(request.topUpId).toMatch(/^topup_[A-Za-z0-9_-]{16,}$/);
    expect(first.json()).toEqual({
      account_id: "acct_fresh",
      balance_usd: "12.500000",
      held_usd: "0.000000",
      available_usd: "12.500000",
      balance_micros: "12500000",
      held_micros: "0",
      available_micros: "12500000",
      top_up_id: request.topUpId,
    });

    const second = await run(["accounts", "topup", "--account", "acct_fresh", "--usd", "0.000001"], env());
    expect(second.code).toBe(0);
    const again = billing.recorded.topUp.at(-1)!;
    expect(again.amountMicros).toBe(1n);
    expect(again.note).toBe("");
    expect(again.topUpId).not.toBe(request.topUpId);
    expect(second.json().balance_usd).toBe("12.500001");
    expect(auth.recorded.topUp).toHaveLength(0);
  });

  it("show merges the account from auth with the balance from billing", async () => {
    const result = await run(["accounts", "show", "--account", KNOWN_ACCOUNT], env());
    expect(result.code).toBe(0);
    expect(result.stdout).toBe(
      `${JSON.stringify(
        {
          account_id: KNOWN_ACCOUNT,
          email: "known@example.com",
          role: "user",
          disabled: false,
          max_concurrent_jobs: "default",
          requests_per_minute: null,
          balance_usd: "5.000000",
          held_usd: "0.120000",
          available_usd: "4.880000",
          balance_micros: "5000000",
          held_micros: "120000",
          available_micros: "4880000",
        },
        null,
        2,
      )}\n`,
    );
    expect(auth.recorded.getAccount.at(-1)!.accountId).toBe(KNOWN_ACCOUNT);
    expect(billing.recorded.getBalance.at(-1)!.accountId).toBe(KNOWN_ACCOUNT);
    expect(billing.recorded.getAccount).toHaveLength(0);
  });
});

describe("keys create", () => {
  it("sends limit, expiry and models, and prints the key once", async () => {
    const before = Date.now();
    const result = await run(
      ["keys", "create", "--account", KNOWN_ACCOUNT, "--name", "ci", "--limit-usd", "2.5", "--expires-days", "30", "--models", "m1, m2,m1"],
      env(),
    );
    const after = Date.now();
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    const request = auth.recorded.createKey.at(-1)!;
    expect(request.limitMicros).toBe(2_500_000n);
    expect(request.models).toEqual(["m1", "m2"]);
    const expiresMs = Number(request.expiresAtUnixMs);
    expect(expiresMs).toBeGreaterThanOrEqual(before + 30 * 86_400_000);
    expect(expiresMs).toBeLessThanOrEqual(after + 30 * 86_400_000);
    expect(result.json()).toEqual({
      key: "td-fakesecretvalue",
      key_id: "key_fake1",
      name: "ci",
      limit_usd: "2.500000",
      expires_at: new Date(expiresMs).toISOString(),
      models: ["m1", "m2"],
      requests_per_minute: null,
      note: "Shown once: store it now",
    });
  });

  it("leaves limit and expiry unset when not given", async () => {
    const result = await run(["keys", "create", "--account", KNOWN_ACCOUNT], env());
    expect(result.code).toBe(0);
    const request = auth.recorded.createKey.at(-1)!;
    expect([request.limitMicros, request.expiresAtUnixMs, request.models, request.name]).toEqual([undefined, undefined, [], ""]);
    expect(result.json()).toEqual({
      key: "td-fakesecretvalue",
      key_id: "key_fake1",
      name: "",
      limit_usd: null,
      expires_at: null,
      models: [],
      requests_per_minute: null,
      note: "Shown once: store it now",
    });
  });
});

describe("cost and prices", () => {
  it("cost prints a settled record with tier text, lower-case status and ISO times", async () => {
    const result = await run(["cost", KNOWN_REQUEST], env());
    expect(result.code).toBe(0);
    expect(billing.recorded.getCost.at(-1)!.requestId).toBe(KNOWN_REQUEST);
    expect(result.json()).toEqual({
      request_id: KNOWN_REQUEST,
      status: "charged",
      model: "sandbox-alpha",
      size: "2048x1024",
      tier: "2K",
      images_requested: 3,
      images_delivered: 2,
      amount_usd: "0.080000",
      amount_micros: "80000",
      unit_price_usd: "0.040000",
      created_at: "2026-01-01T00:00:00.000Z",
      settled_at: "2026-01-01T00:00:31.500Z",
    });
  });

  it("cost of a pending request has no settled_at", async () => {
    const result = await run(["cost", PENDING_REQUEST], env());
    expect(result.code).toBe(0);
    expect(result.json()).toMatchObject({ status: "pending", tier: "1K", amount_usd: "0.000000", settled_at: null });
  });

  it("prices list prints every price in USD and micros", async () => {
    const result = await run(["prices", "list"], env());
    expect(result.code).toBe(0);
    expect(result.json()).toEqual({
      prices: [
        { model: "sandbox-alpha", tier: "1K", usd: "0.020000", micros: "20000" },
        { model: "sandbox-alpha", tier: "4K", usd: "1.234567", micros: "1234567" },
      ],
    });
  });
});
