import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestStack, TEST_ADMIN, type TestStack } from "./harness.ts";
import { ConsoleBrowser, signedIn } from "./console-browser.ts";

// Tenant isolation and the session guards, for EVERY route of the console API:
// account B, holding account A's ids, can neither read nor change A's keys,
// usage, cost records or images; a user gets 403 on every admin route; every
// state-changing route wants the CSRF header; every route but sign-in wants a session.

let stack: TestStack;
let admin: ConsoleBrowser;

interface Tenant {
  id: string;
  email: string;
  browser: ConsoleBrowser;
  keyId: string;
  secret: string;
  requestId: string;
}
let a: Tenant;
let b: Tenant;

interface Route {
  method: "GET" | "POST" | "PUT" | "DELETE";
  /** The path as B would send it when aiming at A's things. */
  path: () => string;
  body?: () => unknown;
  admin?: boolean;
}

/** The contract's routes (the console brief's table), with A's ids where a route takes one. */
const ROUTES: Record<string, Route> = {
  "POST /session": { method: "POST", path: () => "/session", body: () => ({ email: a.email, password: "wrong-password" }) },
  "DELETE /session": { method: "DELETE", path: () => "/session" },
  "GET /me": { method: "GET", path: () => "/me" },
  "POST /password": { method: "POST", path: () => "/password", body: () => ({ currentPassword: "user-password-1", newPassword: "user-password-1" }) },
  "GET /balance": { method: "GET", path: () => "/balance" },
  "GET /spend": { method: "GET", path: () => "/spend?days=3" },
  "GET /keys": { method: "GET", path: () => "/keys" },
  "POST /keys": { method: "POST", path: () => "/keys", body: () => ({ name: "made by B" }) },
  "DELETE /keys/:id": { method: "DELETE", path: () => `/keys/${a.keyId}` },
  "GET /usage": { method: "GET", path: () => `/usage?keyId=${a.keyId}` },
  "GET /usage.csv": { method: "GET", path: () => `/usage.csv?keyId=${a.keyId}` },
  "GET /usage/:requestId": { method: "GET", path: () => `/usage/${a.requestId}` },
  "POST /playground": { method: "POST", path: () => "/playground", body: () => ({ model: "beta-2-lite", prompt: "B's picture", size: "1024x1024" }) },
  "GET /playground/:id": { method: "GET", path: () => `/playground/${a.requestId}` },
  "GET /models": { method: "GET", path: () => "/models" },
  "GET /admin/accounts": { method: "GET", path: () => "/admin/accounts", admin: true },
  "POST /admin/accounts": { method: "POST", path: () => "/admin/accounts", body: () => ({ email: "sneaky@example.test", password: "password-123", role: "admin" }), admin: true },
  "POST /admin/accounts/:id/topup": { method: "POST", path: () => `/admin/accounts/${b.id}/topup`, body: () => ({ usd: "100", note: "free money" }), admin: true },
  "POST /admin/accounts/:id/disable": { method: "POST", path: () => `/admin/accounts/${a.id}/disable`, admin: true },
  "POST /admin/accounts/:id/enable": { method: "POST", path: () => `/admin/accounts/${a.id}/enable`, admin: true },
  "GET /admin/prices": { method: "GET", path: () => "/admin/prices", admin: true },
  "PUT /admin/prices": { method: "PUT", path: () => "/admin/prices", body: () => ({ model: "beta", tier: "1K", usd: "0.000001" }), admin: true },
  "GET /admin/models": { method: "GET", path: () => "/admin/models", admin: true },
  "GET /admin/overview": { method: "GET", path: () => "/admin/overview", admin: true },
  "GET /admin/channels": { method: "GET", path: () => "/admin/channels", admin: true },
  "GET /admin/accounts/:id": { method: "GET", path: () => `/admin/accounts/${a.id}`, admin: true },
  "GET /admin/accounts/:id/statement": { method: "GET", path: () => `/admin/accounts/${a.id}/statement`, admin: true },
  "GET /admin/accounts/:id/usage": { method: "GET", path: () => `/admin/accounts/${a.id}/usage`, admin: true },
  "GET /admin/accounts/:id/usage/:requestId": { method: "GET", path: () => `/admin/accounts/${a.id}/usage/${a.requestId}`, admin: true },
  "POST /admin/accounts/:id/adjust": { method: "POST", path: () => `/admin/accounts/${b.id}/adjust`, body: () => ({ usd: "100", note: "free money" }), admin: true },
};

const WRITES = Object.entries(ROUTES).filter(([name, route]) => route.method !== "GET" && name !== "POST /session");
const call = (browser: ConsoleBrowser, route: Route, options: { csrf?: string | null; cookie?: string | null } = {}) =>
  browser.call(route.method, route.path(), { ...(route.body && { body: route.body() }), ...options });

async function tenant(name: string, usd: string): Promise<Tenant> {
  const email = `${name}@example.test`;
  const created = await admin.call("POST", "/admin/accounts", { body: { email, password: "user-password-1", role: "user" } });
  const id = created.body.account.id as string;
  await admin.call("POST", `/admin/accounts/${id}/topup`, { body: { usd, note: "test" } });
  const browser = await signedIn(stack.edgeUrl, email, "user-password-1");
  const { key, secret } = (await browser.call("POST", "/keys", { body: { name: `${name}'s key` } })).body;
  const response = await fetch(`${stack.edgeUrl}/v1/images/generations`, {
    method: "POST",
    headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "beta", prompt: `${name}'s picture`, size: "1024x1024" }),
  });
  expect(response.status).toBe(200);
  return { id, email, browser, keyId: key.id, secret, requestId: response.headers.get("x-request-id")! };
}

async function settled(browser: ConsoleBrowser, requestId: string) {
  for (let attempt = 0; attempt < 200; attempt += 1) {
    const answer = await browser.call("GET", `/usage/${requestId}`);
    if (answer.status === 200 && answer.body.status !== "pending") return answer.body;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`${requestId} stayed pending`);
}

beforeAll(async () => {
  stack = await startTestStack();
  admin = await signedIn(stack.edgeUrl, TEST_ADMIN.email, TEST_ADMIN.password);
  a = await tenant("tenant-a", "5.00");
  b = await tenant("tenant-b", "3.00");
  await settled(a.browser, a.requestId);
  await settled(b.browser, b.requestId);
});
afterAll(async () => {
  await stack?.close();
});

/** Everything of A's that B might touch, to compare before and after. */
async function snapshotOfA() {
  const [keys, usage, balance, cost] = await Promise.all([
    a.browser.call("GET", "/keys"),
    a.browser.call("GET", "/usage"),
    a.browser.call("GET", "/balance"),
    a.browser.call("GET", `/usage/${a.requestId}`),
  ]);
  return { keys: keys.body, usage: usage.body, balance: balance.body, cost: cost.body };
}

describe("tenant isolation", () => {
  it("covers every route of the contract", () => {
    expect(Object.keys(ROUTES)).toHaveLength(30);
  });

  // What B sees on each user route, given A's ids: B's own data, an empty list, or 404.
  const expectations: Record<string, (answer: Awaited<ReturnType<typeof call>>) => void> = {
    "POST /session": (answer) => expect(answer.status).toBe(401),
    "GET /me": (answer) => expect(answer.body.account.id).toBe(b.id),
    "POST /password": (answer) => expect(answer.status).toBe(204),
    "GET /balance": (answer) => expect(answer.body.balanceUsd).toBe("2.980000"),
    "GET /spend": (answer) => expect(answer.body.days.at(-1)).toMatchObject({ usd: "0.020000", requests: 1 }),
    "GET /keys": (answer) => {
      expect(answer.body.keys.map((key: { id: string }) => key.id)).toEqual([b.keyId]);
      expect(answer.text).not.toContain(a.keyId);
    },
    "POST /keys": (answer) => expect(answer.status).toBe(201),
    "DELETE /keys/:id": (answer) => expect([answer.status, answer.body.error.code]).toEqual([404, "not_found"]),
    "GET /usage": (answer) => expect(answer.body).toEqual({ requests: [], nextCursor: null }),
    "GET /usage.csv": (answer) => {
      expect(answer.status).toBe(200);
      expect(answer.text.trim().split("\r\n")).toHaveLength(1);
      expect(answer.text).not.toContain(a.requestId);
    },
    "GET /usage/:requestId": (answer) => expect([answer.status, answer.body.error.code]).toEqual([404, "not_found"]),
    "POST /playground": (answer) => expect(answer.status).toBe(200),
    "GET /playground/:id": (answer) => expect([answer.status, answer.body.error.code]).toEqual([404, "not_found"]),
    "GET /models": (answer) => expect(answer.status).toBe(200),
    "DELETE /session": (answer) => expect(answer.status).toBe(204),
  };

  it("keeps A's keys, usage, cost records and balance out of B's reach on every user route", async () => {
    const before = await snapshotOfA();
    const userRoutes = Object.entries(ROUTES).filter(([, route]) => !route.admin);
    expect(userRoutes.map(([name]) => name).sort()).toEqual(Object.keys(expectations).sort());
    // Sign-out last, so every other route runs on B's live session.
    for (const [name, route] of userRoutes.sort(([x], [y]) => Number(x === "DELETE /session") - Number(y === "DELETE /session"))) {
      const answer = await call(b.browser, route);
      expectations[name]!(answer);
    }
    // B's unfiltered usage never lists A's request either.
    const fresh = await signedIn(stack.edgeUrl, b.email, "user-password-1");
    const bUsage = await fresh.call("GET", "/usage");
    expect(bUsage.text).not.toContain(a.requestId);
    // A's own view is unchanged: same keys (none revoked), same usage, same balance, same cost record.
    const after = await snapshotOfA();
    expect(after).toEqual(before);
    expect(after.keys.keys[0].revokedAt).toBeNull();
    // A's key still works, A's session still works.
    const stillWorks = await fetch(`${stack.edgeUrl}/v1/images/generations`, {
      method: "POST",
      headers: { authorization: `Bearer ${a.secret}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "beta-2-lite", prompt: "still mine", size: "1024x1024" }),
    });
    expect(stillWorks.status).toBe(200);
    await settled(a.browser, stillWorks.headers.get("x-request-id")!);
    b.browser = fresh;
  });

  it("answers 403 forbidden to a non-admin on every admin route, changing nothing", async () => {
    const before = await snapshotOfA();
    const pricesBefore = (await admin.call("GET", "/admin/prices")).body;
    for (const [name, route] of Object.entries(ROUTES).filter(([, r]) => r.admin)) {
      const answer = await call(b.browser, route);
      expect([name, answer.status, answer.body.error.code]).toEqual([name, 403, "forbidden"]);
      expect(answer.body.error.type).toBe("gateway_error");
    }
    expect(await snapshotOfA()).toEqual(before);
    expect((await admin.call("GET", "/admin/prices")).body).toEqual(pricesBefore);
    expect((await b.browser.call("GET", "/balance")).body.balanceUsd).not.toBe("102.980000");
    const accounts = (await admin.call("GET", "/admin/accounts")).body.accounts;
    expect(accounts.find((account: { email: string }) => account.email === "sneaky@example.test")).toBeUndefined();
    expect(accounts.find((account: { id: string }) => account.id === a.id).disabled).toBe(false);
  });

  it("lets an admin through on every admin route (so the 403s above were the role check)", async () => {
    for (const [name, route] of Object.entries(ROUTES).filter(([, r]) => r.admin)) {
      const answer = await call(admin, route);
      expect([name, answer.status]).toEqual([name, route.method === "POST" && name === "POST /admin/accounts" ? 201 : 200]);
    }
    // Disabling A ended A's sessions; A signs in again for the tests below.
    a.browser = await signedIn(stack.edgeUrl, a.email, "user-password-1");
  });
});

describe("CSRF", () => {
  it("refuses every state-changing route with the header missing or wrong: 403 csrf_failed", async () => {
    const before = await snapshotOfA();
    for (const [name, route] of WRITES) {
      for (const csrf of [null, "wrong-token", `${a.browser.csrfToken}`]) {
        // A's own session, missing, wrong, or with the token of nothing in particular.
        const token = csrf === `${a.browser.csrfToken}` ? `${a.browser.csrfToken}x` : csrf;
        const browser = route.admin ? admin : a.browser;
        const answer = await call(browser, route, { csrf: token });
        expect([name, token, answer.status, answer.body.error.code]).toEqual([name, token, 403, "csrf_failed"]);
      }
    }
    // B's valid CSRF token does not work with A's session cookie.
    const crossed = await a.browser.call("POST", "/keys", { body: { name: "x" }, csrf: b.browser.csrfToken });
    expect([crossed.status, crossed.body.error.code]).toEqual([403, "csrf_failed"]);
    expect(await snapshotOfA()).toEqual(before);
    expect((await a.browser.call("GET", "/me")).status).toBe(200);
  });
});

describe("sessions", () => {
  it("answers 401 not_signed_in on every route but sign-in when there is no session", async () => {
    const stranger = new ConsoleBrowser(stack.edgeUrl);
    for (const [name, route] of Object.entries(ROUTES).filter(([n]) => n !== "POST /session")) {
      const answer = await call(stranger, route, { csrf: "anything" });
      expect([name, answer.status, answer.body.error.code]).toEqual([name, 401, "not_signed_in"]);
    }
  });
});
