import { existsSync, mkdirSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chromium, type Browser, type Page } from "playwright-core";
import { startTestStack, TEST_ADMIN, type TestStack } from "./harness.ts";
import { signedIn } from "./console-browser.ts";
import { WebhookReceiver, verified } from "./webhook-receiver.ts";

// The Webhooks page in a real browser (Debian's Chromium through playwright-core) against the
// in-process stack over HTTP and PostgreSQL: an account holder adds an endpoint and copies its
// secret, sees a delivery whose attempts the local receiver answered 500, redelivers it, and the
// operator sees it on the account's page. Screenshots under test-output/screenshots/webhooks-*.

const CHROMIUM = process.env.CONSOLE_TEST_CHROMIUM ?? "/usr/bin/chromium";
const SCREENSHOTS = new URL("../../../test-output/screenshots/", import.meta.url).pathname;
const USER = { email: "hooks-page@example.test", password: "hooks-password-1" };

let stack: TestStack;
let receiver: WebhookReceiver;
let browser: Browser;
let page: Page;
const pageProblems: string[] = [];

async function signIn(who: { email: string; password: string }) {
  await page.goto("/console/sign-in");
  await page.locator('input[name="email"]').fill(who.email);
  await page.locator('input[name="password"]').fill(who.password);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.locator(".account-email").filter({ hasText: who.email }).waitFor();
}

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`Chromium is not installed at ${CHROMIUM} (sudo apt-get install -y chromium)`);
  mkdirSync(SCREENSHOTS, { recursive: true });
  receiver = await WebhookReceiver.start();
  stack = await startTestStack({ WEBHOOK_ALLOW_PRIVATE_URLS: "true", WEBHOOK_FIRST_RETRY_MS: "200", WEBHOOK_POLL_MS: "100" });
  const admin = await signedIn(stack.edgeUrl, TEST_ADMIN.email, TEST_ADMIN.password);
  const created = await admin.call("POST", "/admin/accounts", { body: { ...USER, role: "user" } });
  await admin.call("POST", `/admin/accounts/${created.body.account.id}/topup`, { body: { usd: "5", note: "test" } });
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox", "--disable-gpu", "--no-first-run"] });
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 }, baseURL: stack.edgeUrl });
  page = await context.newPage();
  page.setDefaultTimeout(20_000);
  page.on("pageerror", (error) => pageProblems.push(`page error: ${error.message}`));
  page.on("console", (message) => {
    if (/Content Security Policy/i.test(message.text())) pageProblems.push(`CSP: ${message.text()}`);
  });
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await stack?.close();
  await receiver?.close();
});

describe("the Webhooks page in a browser", { timeout: 120_000 }, () => {
  it("adds an endpoint, shows attempts, redelivers, and shows the operator the account's deliveries", async () => {
    receiver.answers.set("/page", 500);
    await signIn(USER);
    await page.locator(".nav").getByRole("link", { name: "Webhooks" }).click();
    await page.getByRole("heading", { name: "Webhooks" }).waitFor();
    await page.locator('input[name="url"]').fill(`${receiver.url}/page`);
    await page.getByRole("button", { name: "Add endpoint" }).click();
    const secret = await page.locator('[data-testid="webhook-secret"]').inputValue();
    expect(secret).toMatch(/^whsec_/);
    await page.locator('[data-testid="webhook-endpoints"]').getByText(`${receiver.url}/page`).waitFor();

    const user = await signedIn(stack.edgeUrl, USER.email, USER.password);
    const apiKey = (await user.call("POST", "/keys", { body: { name: "page" } })).body.secret;
    const response = await fetch(`${stack.edgeUrl}/v1/images/generations`, {
      method: "POST",
      headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "beta", prompt: "a bridge", size: "1024x1024" }),
    });
    const requestId = response.headers.get("x-request-id")!;
    await receiver.waitFor("/page", 2);

    const row = page.locator('[data-testid="webhook-deliveries"] tr').filter({ hasText: requestId });
    await expect
      .poll(async () => {
        await page.getByRole("button", { name: "Refresh" }).click();
        return row.locator(".attempts li").count();
      })
      .toBe(2);
    expect(await row.locator(".attempts").textContent()).toContain("500");
    await page.screenshot({ path: `${SCREENSHOTS}webhooks-01-retrying.png`, fullPage: true });

    receiver.answers.set("/page", 200);
    await row.getByRole("button", { name: "Redeliver" }).click();
    const third = (await receiver.waitFor("/page", 3))[2]!;
    expect(verified(secret, third).data.id).toBe(requestId);
    await expect
      .poll(async () => {
        await page.getByRole("button", { name: "Refresh" }).click();
        return row.locator(".badge").first().textContent();
      })
      .toBe("succeeded");
    await page.screenshot({ path: `${SCREENSHOTS}webhooks-02-redelivered.png`, fullPage: true });

    // The operator's page for the account shows its endpoint and the delivery with its three attempts.
    await page.locator(".account-button").click();
    await page.getByRole("menuitem", { name: "Sign out" }).click();
    await signIn(TEST_ADMIN);
    const accounts = (await (await signedIn(stack.edgeUrl, TEST_ADMIN.email, TEST_ADMIN.password)).call("GET", "/admin/accounts")).body.accounts;
    const accountId = accounts.find((account: { email: string }) => account.email === USER.email).id;
    await page.goto(`/console/admin/accounts/${accountId}`);
    await page.locator('[data-testid="account-webhook-endpoints"]').getByText(`${receiver.url}/page`).waitFor();
    const adminRow = page.locator('[data-testid="webhook-deliveries"] tr').filter({ hasText: requestId });
    expect(await adminRow.locator(".attempts li").count()).toBe(3);
    expect(await adminRow.getByRole("button", { name: "Redeliver" }).count()).toBe(0);
    await page.screenshot({ path: `${SCREENSHOTS}webhooks-03-operator.png`, fullPage: true });
    expect(pageProblems).toEqual([]);
  });
});
