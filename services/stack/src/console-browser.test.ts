import { existsSync, mkdirSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import OpenAI from "openai";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";
import { startTestStack, type TestStack } from "./harness.ts";

// Issue C's acceptance in a real browser: Debian's Chromium driven by playwright-core against a real
// stack. An admin creates and funds an account; its user creates a key in Tokens, the openai SDK uses
// it, Usage shows the request and its cost, the Playground generates, and revoking the key in Tokens
// makes the SDK get 401. Every page is saved as a full-page screenshot under test-output/screenshots.

/** Debian's package; CONSOLE_TEST_CHROMIUM may point elsewhere (e.g. to check the message when it is missing). */
const CHROMIUM = process.env.CONSOLE_TEST_CHROMIUM ?? "/usr/bin/chromium";
const SCREENSHOTS = new URL("../../../test-output/screenshots/", import.meta.url).pathname;
const ADMIN = { email: "admin@example.test", password: "admin-password-1" }; // the harness's admin
const USER = { email: "casey@example.test", password: "casey-password-1" };
const BETA_1K = "$0.02"; // config/prices.json: beta 1K = $0.02
const REQUEST_ID = /^req_[A-Za-z0-9_-]{22}$/;

let stack: TestStack;
let browser: Browser;
let context: BrowserContext;
let page: Page;
/** Uncaught page errors, CSP refusals and writes without the CSRF header: the console must have none. */
const pageProblems: string[] = [];
const shared: { secret?: string; requestId?: string } = {};

function requireChromium() {
  if (existsSync(CHROMIUM)) return;
  throw new Error(
    `Chromium is not installed at ${CHROMIUM}: the console's browser test drives Debian's Chromium. ` +
      "Install the Debian package with `sudo apt-get install -y chromium` (.ci/run does this in CI).",
  );
}

/** A full-page picture from the top, the pointer parked where it highlights nothing. */
async function screenshot(name: string) {
  await page.mouse.move(1, 1);
  await page.mouse.wheel(0, -100_000);
  await page.screenshot({ path: `${SCREENSHOTS}${name}.png`, fullPage: true });
}

const sdk = (apiKey: string) => new OpenAI({ apiKey, baseURL: `${stack.edgeUrl}/v1`, maxRetries: 0 });

async function openPage(): Promise<void> {
  context = await browser.newContext({ viewport: { width: 1280, height: 860 }, baseURL: stack.edgeUrl });
  page = await context.newPage();
  page.setDefaultTimeout(20_000);
  page.on("pageerror", (error) => pageProblems.push(`page error: ${error.message}`));
  page.on("request", (request) => {
    const writes = request.method() !== "GET" && request.method() !== "HEAD";
    const signingIn = request.method() === "POST" && new URL(request.url()).pathname === "/console/api/session"; // no session yet
    if (writes && !signingIn && request.url().includes("/console/api/") && !request.headers()["x-csrf-token"]) {
      pageProblems.push(`no x-csrf-token on ${request.method()} ${request.url()}`);
    }
  });
  page.on("console", (message) => {
    if (/Content Security Policy/i.test(message.text())) pageProblems.push(`CSP: ${message.text()}`);
  });
}

async function signIn(who: { email: string; password: string }) {
  await page.locator('input[name="email"]').fill(who.email);
  await page.locator('input[name="password"]').fill(who.password);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.locator(".account-email").filter({ hasText: who.email }).waitFor();
}

async function signOut() {
  await page.locator(".account-button").click();
  await page.getByRole("menuitem", { name: "Sign out" }).click();
  await page.getByRole("heading", { name: "Sign in to Orvado" }).waitFor();
}

const nav = (label: string) => page.locator(".nav").getByRole("link", { name: label }).click();

/** The cost record once billing has settled it, through the public lookup. */
async function settled(requestId: string) {
  for (let attempt = 0; attempt < 400; attempt += 1) {
    const body = (await (await fetch(`${stack.edgeUrl}/api/cost/request/${requestId}`)).json()) as { status?: string };
    if (body.status && body.status !== "pending") return body;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`the cost of ${requestId} stayed pending`);
}

beforeAll(async () => {
  requireChromium();
  mkdirSync(SCREENSHOTS, { recursive: true });
  // Few allowed sign-in failures, so the test can see the console's answer to too many.
  stack = await startTestStack({ AUTH_SIGNIN_MAX_FAILURES_PER_ACCOUNT: "3" });
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  await openPage();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await stack?.close();
});

describe("the console in a browser", { timeout: 120_000 }, () => {
  it("sends a deep link to sign-in, answers wrong credentials inline, then returns to the page asked for", async () => {
    await page.goto("/console/admin");
    await page.getByRole("heading", { name: "Sign in to Orvado" }).waitFor();
    await page.waitForURL((url) => url.pathname === "/console/sign-in");

    await page.locator('input[name="email"]').fill(ADMIN.email);
    await page.locator('input[name="password"]').fill("not the password");
    await page.getByRole("button", { name: "Sign in" }).click();
    await expect.poll(() => page.getByRole("alert").textContent()).toContain("do not match");
    await screenshot("01-sign-in");

    await signIn(ADMIN);
    await page.getByRole("heading", { name: "Admin" }).waitFor();
    expect(new URL(page.url()).pathname).toBe("/console/admin");
  });

  it("lets the admin create an account and top it up with a note", async () => {
    const create = page.locator("form").filter({ has: page.getByRole("button", { name: "Create account" }) });
    await create.locator('input[name="email"]').fill(USER.email);
    await create.locator('input[name="password"]').fill(USER.password);
    await create.getByRole("button", { name: "Create account" }).click();
    await page.getByText(`Account ${USER.email} created`).waitFor();

    const row = page.locator(`tr[data-account-email="${USER.email}"]`);
    await expect.poll(() => row.locator('[data-testid="account-balance"]').textContent()).toBe("$0.00");
    await row.getByRole("button", { name: "Top up" }).click();
    const dialog = page.getByRole("dialog");
    await dialog.locator('input[name="usd"]').fill("5.00");
    await dialog.locator('input[name="note"]').fill("welcome credit, invoice 1001");
    await dialog.getByRole("button", { name: "Add funds" }).click();
    await dialog.waitFor({ state: "detached" });
    await expect.poll(() => row.locator('[data-testid="account-balance"]').textContent()).toBe("$5.00");
    await screenshot("02-admin-accounts");

    await row.getByRole("button", { name: "Disable" }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Disable account" }).click();
    await expect.poll(() => row.textContent()).toContain("disabled");
    await row.getByRole("button", { name: "Enable" }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Enable account" }).click();
    await expect.poll(() => row.textContent()).toContain("active");
  });

  it("lets the admin change a price with a note and see the recorded change, and see models with channel health", async () => {
    await page.locator(".tabs").getByRole("link", { name: "Prices" }).click();
    const row = page.locator("tr", { has: page.getByText("beta-pro", { exact: true }) }).filter({ hasText: "4K" });
    await row.getByRole("button", { name: "Edit" }).click();
    const editor = page.locator("tr.editing");
    await editor.locator('input[name="usd"]').fill("0.200000");
    await editor.locator('input[name="note"]').fill("4K upstream cost went up");
    await editor.getByRole("button", { name: "Save" }).click();
    await page.locator("tr", { hasText: "4K upstream cost went up" }).waitFor();
    expect(await page.locator("tr", { hasText: "4K upstream cost went up" }).textContent()).toContain("$0.18");
    await screenshot("03-admin-prices");

    await page.locator(".tabs").getByRole("link", { name: "Models" }).click();
    await page.locator(".model-grid .card").first().waitFor();
    expect(await page.locator(".model-grid .card").count()).toBe(6);
    expect(await page.locator(".health.ok").count()).toBeGreaterThanOrEqual(6);
    await screenshot("04-admin-models");
    await signOut();
  });

  it("lets the user create a key whose secret is shown once, and the openai SDK generates with it", async () => {
    await signIn(USER);
    await nav("Tokens");
    await page.locator('input[name="name"]').fill("ci-key");
    await page.locator('input[name="limitUsd"]').fill("1.00");
    await page.locator('label.check', { hasText: /^beta$/ }).locator("input").check();
    await page.getByRole("button", { name: "Create key" }).click();
    const secretField = page.locator('[data-testid="new-secret"]');
    await secretField.waitFor();
    const secret = await secretField.inputValue();
    expect(secret).toMatch(/^td-/);
    await page.getByText("You will not see it again").waitFor();
    const row = page.locator('tr[data-key-name="ci-key"]');
    await row.waitFor();
    const shownPrefix = (await row.locator("code").first().textContent())!.replace(/…$/, "");
    expect(shownPrefix.length).toBeGreaterThan(3);
    expect(secret.startsWith(shownPrefix)).toBe(true);
    expect(await row.textContent()).toContain("active");
    await screenshot("05-tokens-created");
    await page.getByRole("button", { name: "I have saved it" }).click();
    expect(await page.locator('[data-testid="new-secret"]').count()).toBe(0);

    // A key that expires: the chosen day is kept and shown.
    const inAMonth = new Date(Date.now() + 30 * 86_400_000).toISOString().slice(0, 10);
    await page.locator('input[name="name"]').fill("expiring");
    await page.locator('input[name="expiresAt"]').fill(inAMonth);
    await page.getByRole("button", { name: "Create key" }).click();
    await page.locator('[data-testid="new-secret"]').waitFor();
    await page.getByRole("button", { name: "I have saved it" }).click();
    const expiring = page.locator('tr[data-key-name="expiring"]');
    await expiring.waitFor();
    const [year, month, day] = inAMonth.split("-").map(Number);
    const shown = new Date(year!, month! - 1, day!).toLocaleDateString("en-US", { month: "short", day: "numeric", year: "numeric" });
    expect(await expiring.textContent()).toContain(shown);
    expect(await expiring.textContent()).toContain("active");

    const { data, response } = await sdk(secret).images.generate({ model: "beta", prompt: "a lighthouse at dawn", size: "1024x1024" }).withResponse();
    expect(data.data).toHaveLength(1);
    const requestId = response.headers.get("x-request-id")!;
    expect(requestId).toMatch(REQUEST_ID);
    expect((await settled(requestId)).status).toBe("charged");
    Object.assign(shared, { secret, requestId });
  });

  it("shows the request and its cost in Usage, filters it, exports it and opens its detail", async () => {
    const requestId = shared.requestId!;
    await nav("Usage");
    const row = page.locator(`tr[data-request-id="${requestId}"]`);
    await row.waitFor();
    const rowText = await row.textContent();
    expect(rowText).toContain(BETA_1K);
    expect(rowText).toContain("charged");
    expect(rowText).toContain("ci-key");

    await row.click();
    const detail = page.locator('[data-testid="request-detail"]');
    await detail.getByText(requestId).first().waitFor();
    await expect.poll(() => detail.textContent()).toContain("20000 micro-USD");
    expect(await detail.textContent()).toContain("1 delivered of 1 requested");
    await screenshot("06-usage-detail");

    const csvHref = await page.getByRole("link", { name: "Export CSV" }).getAttribute("href");
    const csv = await page.request.get(csvHref!);
    expect(csv.status()).toBe(200);
    expect(csv.headers()["content-disposition"]).toContain("attachment");
    expect(await csv.text()).toContain(requestId);

    await page.locator('select[name="model"]').selectOption("beta-pro");
    await page.getByText("No requests match").waitFor();
    await page.locator('select[name="model"]').selectOption("beta");
    await row.waitFor();
    const filteredHref = await page.getByRole("link", { name: "Export CSV" }).getAttribute("href");
    expect(filteredHref).toContain("model=beta");
  });

  it("generates an image in the Playground and shows its cost and request id", async () => {
    await nav("Playground");
    await page.locator('textarea[name="prompt"]').fill("a paper boat on a pond");
    await page.locator('select[name="model"]').selectOption("beta");
    await page.locator('select[name="size"]').selectOption("1536x1024");
    await page.getByText("estimated").waitFor();
    await page.getByRole("button", { name: "Generate" }).click();
    const result = page.locator('[data-testid="playground-result"]');
    await result.locator("img").first().waitFor();
    await expect.poll(() => result.locator('[data-testid="playground-cost"]').textContent(), { timeout: 20_000 }).toBe(BETA_1K);
    expect(await result.locator('[data-testid="playground-request-id"]').textContent()).toMatch(REQUEST_ID);
    await expect
      .poll(() => result.locator("img").first().evaluate((element) => {
        const image = element as unknown as { complete: boolean; naturalWidth: number }; // no DOM types in this tsconfig
        return image.complete ? image.naturalWidth : 0;
      }))
      .toBe(1536);
    await screenshot("07-playground");

    // A tier the model does not offer: the form says so and will not send it (the API would refuse it: 400 tier_not_offered).
    await page.locator('select[name="size"]').selectOption("custom");
    await page.locator('input[name="width"]').fill("4096");
    await page.locator('input[name="height"]').fill("2304");
    await page.getByText("beta does not offer the 4K tier").waitFor();
    expect(await page.getByRole("button", { name: "Generate" }).isDisabled()).toBe(true);
    await screenshot("07b-playground-refused");
  });

  it("shows balance, 30-day spend and recent requests on the dashboard", async () => {
    await nav("Dashboard");
    await expect.poll(() => page.locator('[data-testid="stat-available"]').textContent()).toBe("$4.96");
    expect(await page.locator('[data-testid="stat-balance"]').textContent()).toBe("$4.96");
    // The spend chart loads apart from the balance (its own request): wait for its 30 days.
    await expect.poll(() => page.locator(".chart-day title").count()).toBe(30);
    const titles = await page.locator(".chart-day title").allTextContents();
    expect(titles.some((title) => title.includes("$0.04") && title.includes("2 charged requests"))).toBe(true);
    await expect.poll(() => page.locator(".card", { hasText: "Recent requests" }).locator("tbody tr").count()).toBe(2);
    await screenshot("08-dashboard");

    await page.setViewportSize({ width: 390, height: 844 });
    await screenshot("08b-dashboard-narrow");
    await page.setViewportSize({ width: 1280, height: 860 });
  });

  it("revokes the key in Tokens after confirmation, and the SDK is then refused with 401", async () => {
    await nav("Tokens");
    const row = page.locator('tr[data-key-name="ci-key"]');
    await row.getByRole("button", { name: "Revoke" }).click();
    const dialog = page.getByRole("dialog");
    await dialog.getByText("cannot be undone").waitFor();
    await dialog.getByRole("button", { name: "Revoke key" }).click();
    await dialog.waitFor({ state: "detached" });
    await expect.poll(() => row.textContent()).toContain("revoked");
    await screenshot("09-tokens-revoked");

    // The edge may trust its key cache for a moment (EDGE_KEY_CACHE_MS): ask until it refuses.
    const status = async () => {
      try {
        await sdk(shared.secret!).images.generate({ model: "beta", prompt: "after revocation", size: "1024x1024" });
        return 200;
      } catch (error) {
        return error instanceof OpenAI.APIError ? error.status : -1;
      }
    };
    await expect.poll(status, { timeout: 10_000, interval: 150 }).toBe(401);
  });

  it("changes the password from the account menu, and a lost session returns to sign-in", async () => {
    await page.locator(".account-button").click();
    await page.getByRole("menuitem", { name: "Change password" }).click();
    await page.locator('input[name="currentPassword"]').fill(USER.password);
    await page.locator('input[name="newPassword"]').fill("casey-password-2");
    await page.locator('input[name="repeatPassword"]').fill("casey-password-2");
    await page.getByRole("button", { name: "Change password" }).click();
    await page.getByText("Password changed.").waitFor();
    await screenshot("10-account");

    await context.clearCookies();
    await nav("Usage");
    await page.getByRole("heading", { name: "Sign in to Orvado" }).waitFor();
    // Every title the page takes on the way back: no other page may show, not even for a frame.
    await page.evaluate(`window.titlesShown = [];
      new MutationObserver(() => window.titlesShown.push(document.title)).observe(document.querySelector("title"), { childList: true, characterData: true, subtree: true });`);
    await signIn({ email: USER.email, password: "casey-password-2" });
    await page.waitForURL((url) => url.pathname === "/console/usage");
    await page.locator(".usage-card").waitFor();
    expect(await page.evaluate("window.titlesShown")).not.toContain("Not found · Orvado");
  });

  it("pages through Usage with the API's cursor, forwards and back", async () => {
    // Ten more requests through the console's own API, in the browser's session and with its CSRF token.
    const { csrfToken } = (await (await page.request.get("/console/api/me")).json()) as { csrfToken: string };
    for (let index = 0; index < 10; index += 1) {
      const answer = await page.request.post("/console/api/playground", {
        headers: { "x-csrf-token": csrfToken },
        data: { model: "beta-2-lite", prompt: `page filler ${index}` },
      });
      expect(answer.status()).toBe(200);
    }
    await nav("Usage");
    await page.locator('select[name="pageSize"]').selectOption("10");
    const rows = page.locator(".usage-card tbody tr");
    const ids = () => rows.evaluateAll((elements) => elements.map((element) => element.getAttribute("data-request-id")));
    await expect.poll(() => rows.count()).toBe(10);
    const first = await ids();
    await page.getByRole("button", { name: "Next →" }).click();
    await expect.poll(() => page.getByTestId("page-number").textContent()).toBe("Page 2");
    const second = await ids();
    expect(second).toHaveLength(2);
    expect(second).toContain(shared.requestId);
    expect(second.filter((id) => first.includes(id))).toEqual([]);
    expect(await page.getByRole("button", { name: "Next →" }).isDisabled()).toBe(true);
    await page.getByRole("button", { name: "← Previous" }).click();
    await expect.poll(() => page.getByTestId("page-number").textContent()).toBe("Page 1");
    expect(await ids()).toEqual(first);
    await screenshot("12-usage-pages");
  });

  it("answers too many failed sign-ins with the time to wait", async () => {
    await signOut();
    const alert = page.getByRole("alert");
    const shown = async () => (await alert.allTextContents()).join(" "); // does not wait for an alert to appear
    for (let attempt = 0; attempt < 6 && !/Too many/.test(await shown()); attempt += 1) {
      await page.locator('input[name="email"]').fill(USER.email);
      await page.locator('input[name="password"]').fill(`wrong-${attempt}`);
      await page.getByRole("button", { name: "Sign in" }).click();
      await expect.poll(() => alert.textContent()).toMatch(/do not match|Too many/);
    }
    expect(await alert.textContent()).toMatch(/^Too many sign-in attempts\. Try again in \d+ (seconds?|minutes)\.$/);
    expect(await page.getByRole("button", { name: "Sign in" }).isDisabled()).toBe(true);
    await screenshot("11-sign-in-too-many");
  });

  it("ran without page errors, Content-Security-Policy refusals or writes lacking the CSRF token", () => {
    expect(pageProblems).toEqual([]);
  });
});
