import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Browser, Page } from "playwright-core";
import { startTestStack, TEST_ADMIN, type TestStack } from "./harness.ts";
import { signedIn, type ConsoleBrowser } from "./console-browser.ts";
import { WIDTHS, chartTextSizes, launchChromium, lineCount, noSidewaysPage, outsideViewport, screenshot, selectFitsOptions } from "./console-screens.ts";

// Every console page as a user sees it (issue N item 7): Debian's Chromium (playwright-core) over
// real HTTP against a real stack on PostgreSQL, at 1366 and 390 px. Each page is kept as a
// screenshot under test-output/screenshots/console/<page>-<width>.png, and what was once broken is
// measured in the DOM: chart text drawn at 11 px or more and today's bar labelled, the playground's
// model choice wide enough for its longest id, the usage table's status and cost on a phone's
// screen with model ids on one line, and the statement's amounts signed.

const USER = { email: "robin@example.test", password: "robin-password-1" };

let stack: TestStack;
let browser: Browser;
let page: Page;
let userId: string;
const requestIds: string[] = [];

async function openPage(width: number) {
  await page?.context().close();
  const context = await browser.newContext({ viewport: { width, height: 860 }, baseURL: stack.edgeUrl });
  page = await context.newPage();
  page.setDefaultTimeout(20_000);
  page.on("pageerror", (error) => {
    throw error;
  });
}

async function signIn(email: string, password: string) {
  await page.goto("/console/sign-in");
  await page.locator('input[name="email"]').fill(email);
  await page.locator('input[name="password"]').fill(password);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.locator(".account-button").waitFor();
  // The page links end before the account button (on a phone they share one bar): none hides under it.
  const nav = (await page.locator(".nav").boundingBox())!;
  const button = (await page.locator(".account-button").boundingBox())!;
  const beside = nav.x + nav.width <= button.x || nav.y + nav.height <= button.y;
  expect(beside, `nav ends at ${nav.x + nav.width}, account button starts at ${button.x}`).toBe(true);
}

const generate = (key: string, model: string, prompt: string) =>
  fetch(`${stack.edgeUrl}/v1/images/generations`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model, prompt, size: "1024x1024" }),
  });

async function settled(user: ConsoleBrowser, requestId: string) {
  for (let attempt = 0; attempt < 400; attempt += 1) {
    const answer = await user.call("GET", `/usage/${requestId}`);
    if (answer.status === 200 && answer.body.status !== "pending") return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`${requestId} stayed pending`);
}

/** "Dec 7": how the chart names a UTC day. */
const todayLabel = () => new Date().toLocaleDateString("en-US", { month: "short", day: "numeric", timeZone: "UTC" });

beforeAll(async () => {
  stack = await startTestStack();
  browser = await launchChromium();
  // An account with a top-up, charged requests on two models (one with a long id), a failed one and a playground one.
  const admin = await signedIn(stack.edgeUrl, TEST_ADMIN.email, TEST_ADMIN.password);
  userId = (await admin.call("POST", "/admin/accounts", { body: { ...USER, role: "user" } })).body.account.id;
  await admin.call("POST", `/admin/accounts/${userId}/topup`, { body: { usd: "5", note: "invoice 7" } });
  const user = await signedIn(stack.edgeUrl, USER.email, USER.password);
  const key = (await user.call("POST", "/keys", { body: { name: "backend", limitUsd: "2.00" } })).body.secret;
  for (const [model, prompt] of [["alpha-2.5-flare", "a lighthouse"], ["beta", "a kite"], ["beta", "a storm [sandbox:fail]"]] as const) {
    requestIds.push((await generate(key, model, prompt)).headers.get("x-gateway-request-id")!);
  }
  requestIds.push((await user.call("POST", "/playground", { body: { model: "beta-2-lite", prompt: "a boat" } })).body.requestId);
  for (const requestId of requestIds) await settled(user, requestId);
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await stack?.close();
});

describe("every console page at 1366 and 390 px, in Chromium over HTTP", { timeout: 120_000 }, () => {
  for (const width of WIDTHS) {
    it(`shows the account holder's pages at ${width} px`, async () => {
      await openPage(width);
      await signIn(USER.email, USER.password);

      await page.locator(".chart-day").first().waitFor();
      await page.locator(".card", { hasText: "Recent requests" }).locator("tbody tr").first().waitFor();
      await noSidewaysPage(page);
      for (const text of await chartTextSizes(page)) expect(text.px, text.text).toBeGreaterThanOrEqual(11);
      expect(await page.locator(".chart-day").last().locator(".chart-label").textContent()).toBe(todayLabel());
      await screenshot(page, "dashboard");

      await page.goto("/console/usage");
      await page.locator(`tr[data-request-id="${requestIds[0]}"]`).waitFor();
      await page.locator('select[name="model"] option[value="alpha-2.5-sunburst"]').waitFor({ state: "attached" });
      for (const filter of ['select[name="model"]', 'select[name="keyId"]']) {
        const fit = await selectFitsOptions(page, filter);
        expect(fit.fits, `${filter}: ${fit.longest}: ${fit.needed} px in ${fit.width} px`).toBe(true);
      }
      await noSidewaysPage(page);
      // Status and cost are on the screen without scrolling, whatever the width; model ids keep to one line.
      for (const cell of await outsideViewport(page, ".usage-card tbody .col-status, .usage-card tbody .col-cost")) expect(cell.outside, cell.text).toBe(0);
      expect(new Set(await lineCount(page, ".usage-card tbody .col-model code"))).toEqual(new Set([1]));
      expect(await page.locator(`tr[data-request-id="${requestIds[0]}"] .col-model`).textContent()).toBe("alpha-2.5-flare");
      await screenshot(page, "usage");
      await page.locator(`tr[data-request-id="${requestIds[0]}"]`).click();
      await page.locator('[data-testid="request-detail"] img').waitFor();
      await noSidewaysPage(page);
      await screenshot(page, "usage-detail");

      await page.goto("/console/tokens");
      await page.locator('tr[data-key-name="backend"]').waitFor();
      await noSidewaysPage(page);
      await screenshot(page, "tokens");

      await page.goto("/console/playground");
      const model = page.locator('select[name="model"]');
      await model.selectOption("alpha-2.5-sunburst");
      const fit = await selectFitsOptions(page, 'select[name="model"]');
      expect(fit.fits, `${fit.longest}: ${fit.needed} px in ${fit.width} px`).toBe(true);
      expect(await model.locator("option:checked").textContent()).toContain("alpha-2.5-sunburst");
      await noSidewaysPage(page);
      await screenshot(page, "playground");

      await page.goto("/console/account");
      await page.getByRole("heading", { name: "Change password" }).waitFor();
      await noSidewaysPage(page);
      await screenshot(page, "account");
    });

    it(`shows the operator's pages at ${width} px`, async () => {
      await openPage(width);
      await signIn(TEST_ADMIN.email, TEST_ADMIN.password);
      await page.goto("/console/admin");
      await page.locator(`tr[data-account-email="${USER.email}"]`).waitFor();
      await noSidewaysPage(page);
      await screenshot(page, "admin-accounts");

      await page.goto("/console/admin/overview");
      await expect.poll(() => page.locator('[data-testid="overview-requests"]').textContent()).toBe("4");
      await page.locator("tr", { hasText: USER.email }).waitFor();
      // Three charts (requests, spend, top-ups), two of them half-width at 1366 px: all text readable, today labelled.
      expect(await page.locator(".chart").count()).toBe(3);
      const sizes = await chartTextSizes(page);
      expect(sizes.length).toBeGreaterThan(0);
      for (const text of sizes) expect(text.px, text.text).toBeGreaterThanOrEqual(11);
      for (const chart of await page.locator(".chart").all()) {
        expect(await chart.locator(".chart-day").last().locator(".chart-label").textContent()).toBe(todayLabel());
      }
      // The ranking's spend is on the screen at either width.
      for (const cell of await outsideViewport(page, ".two-columns tbody td:last-child")) expect(cell.outside, cell.text).toBe(0);
      await noSidewaysPage(page);
      await screenshot(page, "admin-overview");

      await page.goto(`/console/admin/accounts/${userId}`);
      const statement = page.locator('[data-testid="account-statement"]');
      await statement.getByText("invoice 7").waitFor();
      const amountOf = async (kind: string) => (await statement.locator("tr", { has: page.getByRole("cell", { name: kind, exact: true }) }).locator('[data-testid="entry-amount"]').allTextContents());
      expect(await amountOf("top-up")).toEqual(["+$5.00"]);
      // A hold per request; a charge for each of the three that delivered; a release for the failed one's hold.
      const holds = await amountOf("hold");
      expect(holds).toHaveLength(4);
      for (const text of holds) expect(text).toMatch(/^−\$0\.\d+$/);
      expect((await amountOf("charge")).sort()).toEqual(["−$0.01", "−$0.02", "−$0.04"].sort());
      for (const text of await amountOf("release")) expect(text).toMatch(/^\+\$0\.\d+$/);
      await noSidewaysPage(page);
      await screenshot(page, "admin-account");

      for (const [tab, ready] of [
        ["channels", 'tr[data-channel="beta/sandbox"]'],
        ["prices", "tr >> text=beta-pro"],
        ["models", ".model-grid .card"],
      ] as const) {
        await page.goto(`/console/admin/${tab}`);
        await page.locator(ready).first().waitFor();
        await noSidewaysPage(page);
        await screenshot(page, `admin-${tab}`);
      }
    });
  }
});
