import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestStack, TEST_ADMIN, type TestStack } from "./harness.ts";
import { ConsoleBrowser, signedIn } from "./console-browser.ts";

// Over real HTTP to the console API: answers that carry secrets are never cached,
// and the admin price editor refuses $0 without `free` and prices for models or
// tiers the price table does not have.

let stack: TestStack;
let admin: ConsoleBrowser;

beforeAll(async () => {
  stack = await startTestStack();
  admin = await signedIn(stack.edgeUrl, TEST_ADMIN.email, TEST_ADMIN.password);
});
afterAll(async () => {
  await stack?.close();
});

describe("console answers that carry secrets (HTTP)", () => {
  it("are sent with Cache-Control: no-store", async () => {
    const browser = new ConsoleBrowser(stack.edgeUrl);
    const answers = {
      "wrong sign-in": await browser.signIn(TEST_ADMIN.email, "not-the-password"),
      "sign-in (session cookie, CSRF token)": await browser.signIn(TEST_ADMIN.email, TEST_ADMIN.password),
      "/me (CSRF token)": await browser.call("GET", "/me"),
      "new key (its secret)": await browser.call("POST", "/keys", { body: { name: "cached?" } }),
      "key list": await browser.call("GET", "/keys"),
      "balance": await browser.call("GET", "/balance"),
      "refused write (no CSRF header)": await browser.call("POST", "/keys", { body: { name: "x" }, csrf: null }),
    };
    expect(answers["new key (its secret)"].body.secret).toMatch(/^td-/);
    expect(answers["/me (CSRF token)"].body.csrfToken).toBeTruthy();
    for (const [what, answer] of Object.entries(answers)) expect([what, answer.headers.get("cache-control")]).toEqual([what, "no-store"]);
  });
});

describe("PUT /console/api/admin/prices (HTTP)", () => {
  const put = (body: Record<string, unknown>) => admin.call("PUT", "/admin/prices", { body });

  it("refuses $0 unless free is set, and free with any other price", async () => {
    const zero = await put({ model: "beta-2-lite", tier: "1K", usd: "0" });
    expect([zero.status, zero.body.error.code]).toEqual([400, "invalid_field"]);
    expect(zero.body.error.message).toMatch(/price of 0 makes the model free/);
    const mixed = await put({ model: "beta-2-lite", tier: "1K", usd: "0.02", free: true });
    expect([mixed.status, mixed.body.error.message]).toEqual([400, expect.stringMatching(/free is only for a price of 0/)]);

    const free = await put({ model: "beta-2-lite", tier: "1K", usd: "0.000", free: true, note: "promo" });
    expect([free.status, free.body.price.usd]).toEqual([200, "0.000000"]);
    expect((await put({ model: "beta-2-lite", tier: "1K", usd: "0.01" })).status).toBe(200);
  });

  it("refuses a model or a tier that has no price, changing nothing", async () => {
    const before = (await admin.call("GET", "/admin/prices")).body.prices;
    const model = await put({ model: "bta", tier: "1K", usd: "0.02" });
    expect([model.status, model.body.error.code]).toEqual([400, "invalid_field"]);
    expect(model.body.error.message).toMatch(/Unknown model "bta"/);
    const tier = await put({ model: "beta", tier: "4K", usd: "0.02" });
    expect([tier.status, tier.body.error.message]).toEqual([400, expect.stringMatching(/beta has no 4K tier; its tiers are 1K, 2K/)]);
    expect((await admin.call("GET", "/admin/prices")).body.prices).toEqual(before);
  });
});
