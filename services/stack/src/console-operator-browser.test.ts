import { existsSync, mkdirSync } from "node:fs";
import { Writable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pino } from "pino";
import { chromium, type Browser, type Page } from "playwright-core";
import { startTestStack, type TestStack } from "./harness.ts";
import { signedIn, type ConsoleBrowser } from "./console-browser.ts";

// The operator's pages in Debian's Chromium (playwright-core) against a real stack whose admin
// was created with a generated password, as `npm start` does on a new install: the console sends
// that admin to change it; then the overview, channel health, an account's page (top-up to the
// micro-dollar, signed adjustment, statement, usage, a failed request's detail), the user's
// request detail with its image, the playground's tiers, a key without a name, and the tables at
// 390 px. Every page is saved at 1280 and 390 px wide under test-output/screenshots.

const CHROMIUM = process.env.CONSOLE_TEST_CHROMIUM ?? "/usr/bin/chromium";
const SCREENSHOTS = new URL("../../../test-output/screenshots/", import.meta.url).pathname;
const USER = { email: "dana@example.test", password: "dana-password-1" };
const WIDTHS = [1280, 390] as const;

let stack: TestStack;
let browser: Browser;
let page: Page;
let admin: ConsoleBrowser;
const adminPassword = "a password I chose";
let generatedPassword: string;
let userId: string;
const ids: { ok: string[]; failed?: string } = { ok: [] };
const pageProblems: string[] = [];

/** The stack's log, kept to read the generated admin password from, as an operator reads it. */
const logLines: string[] = [];
const logSink = new Writable({
  write(chunk, _encoding, done) {
    logLines.push(...String(chunk).split("\n").filter(Boolean));
    done();
  },
});

async function screenshot(name: string, width: number) {
  await page.mouse.move(1, 1);
  await page.screenshot({ path: `${SCREENSHOTS}operator-${name}-${width}.png`, fullPage: true });
}

async function openPage(width: number) {
  await page?.context().close();
  const context = await browser.newContext({ viewport: { width, height: 860 }, baseURL: stack.edgeUrl });
  page = await context.newPage();
  page.setDefaultTimeout(20_000);
  page.on("pageerror", (error) => pageProblems.push(`page error: ${error.message}`));
}

async function signIn(email: string, password: string) {
  await page.goto("/console/sign-in");
  await page.locator('input[name="email"]').fill(email);
  await page.locator('input[name="password"]').fill(password);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.locator(".account-button").waitFor();
}

/** The page itself never scrolls sideways: wide tables scroll inside their own box. */
async function noSidewaysPage() {
  const overflow = await page.evaluate<number>("document.documentElement.scrollWidth - window.innerWidth");
  // On failure, name the outermost elements that stick out (those inside a scrolling box do not count).
  const culprits = await page.evaluate<string[]>(`[...document.querySelectorAll("body *")]
    .filter((element) => element.getBoundingClientRect().right > window.innerWidth + 1 && !element.closest(".table-wrap"))
    .filter((element) => !(element.parentElement && element.parentElement.getBoundingClientRect().right > window.innerWidth + 1))
    .map((element) => element.tagName + "." + element.className + " " + Math.round(element.getBoundingClientRect().right))`);
  expect(overflow, culprits.join(", ")).toBeLessThanOrEqual(0);
}

const generate = (key: string, prompt: string) =>
  fetch(`${stack.edgeUrl}/v1/images/generations`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "beta", prompt, size: "1024x1024" }),
  });

async function settled(user: ConsoleBrowser, requestId: string) {
  for (let attempt = 0; attempt < 400; attempt += 1) {
    const answer = await user.call("GET", `/usage/${requestId}`);
    if (answer.status === 200 && answer.body.status !== "pending") return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`${requestId} stayed pending`);
}

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`Chromium is not installed at ${CHROMIUM}: install Debian's package (apt-get install -y chromium)`);
  mkdirSync(SCREENSHOTS, { recursive: true });
  // No admin credentials: auth generates the password and logs it once, as on a new install.
  stack = await startTestStack({ ORVADO_ADMIN_EMAIL: undefined, ORVADO_ADMIN_PASSWORD: undefined }, { logger: pino({ level: "warn" }, logSink) });
  const line = logLines.find((text) => text.includes("generated password"));
  generatedPassword = /generated password (\S+)/.exec(line ?? "")?.[1] ?? "";
  expect(generatedPassword.length).toBeGreaterThanOrEqual(16);
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"] });
  await openPage(1280);
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await stack?.close();
});

describe("the operator's console in a browser", { timeout: 180_000 }, () => {
  it("asks the admin signed in with the generated password to change it, and stops asking once it is changed", async () => {
    await signIn("admin@orvado.local", generatedPassword);
    await page.waitForURL((url) => url.pathname === "/console/account");
    const notice = page.locator(".alert-warning", { hasText: "Change the generated password" });
    await notice.waitFor();
    await screenshot("01-generated-password", 1280);
    await page.locator('input[name="currentPassword"]').fill(generatedPassword);
    await page.locator('input[name="newPassword"]').fill(adminPassword);
    await page.locator('input[name="repeatPassword"]').fill(adminPassword);
    await page.getByRole("button", { name: "Change password" }).click();
    await page.getByText("Password changed.").waitFor();
    await notice.waitFor({ state: "detached" });
    await page.goto("/console/admin");
    await page.getByRole("heading", { name: "Admin" }).waitFor();
    expect(await page.locator(".alert-warning").count()).toBe(0);

    // Some traffic for the operator's pages: two charged requests and one that fails.
    admin = await signedIn(stack.edgeUrl, "admin@orvado.local", adminPassword);
    const created = await admin.call("POST", "/admin/accounts", { body: { ...USER, role: "user" } });
    userId = created.body.account.id;
    await admin.call("POST", `/admin/accounts/${userId}/topup`, { body: { usd: "5", note: "invoice 12" } });
    const user = await signedIn(stack.edgeUrl, USER.email, USER.password);
    const key = (await user.call("POST", "/keys", { body: { name: "backend" } })).body.secret;
    for (const prompt of ["a harbour at dawn", "a kite"]) ids.ok.push((await generate(key, prompt)).headers.get("x-gateway-request-id")!);
    ids.failed = (await generate(key, "a storm [sandbox:fail]")).headers.get("x-gateway-request-id")!;
    for (const requestId of [...ids.ok, ids.failed]) await settled(user, requestId);
  });

  for (const width of WIDTHS) {
    it(`shows the overview across accounts at ${width} px`, async () => {
      if (width !== 1280) {
        await openPage(width);
        await signIn("admin@orvado.local", adminPassword);
      }
      await page.goto("/console/admin/overview");
      await expect.poll(() => page.locator('[data-testid="overview-requests"]').textContent()).toBe("3");
      expect(await page.locator('[data-testid="overview-error-rate"]').textContent()).toBe("33.3%");
      expect(await page.locator('[data-testid="overview-spend"]').textContent()).toBe("$0.04");
      expect(await page.locator('[data-testid="overview-top-ups"]').textContent()).toBe("$5.00");
      await page.locator("tr", { hasText: USER.email }).waitFor();
      await noSidewaysPage();
      await screenshot("02-overview", width);
    });

    it(`shows channel health with success rate and latency at ${width} px`, async () => {
      await page.locator(".tabs").getByRole("link", { name: "Channels" }).click();
      const beta = page.locator('tr[data-channel="beta/sandbox"]');
      await expect.poll(() => beta.locator('[data-testid="success-rate"]').textContent()).toBe("66.7%");
      expect(await beta.textContent()).toContain("closed");
      expect(await beta.locator("td").nth(8).textContent()).toMatch(/\d+ ms|\d+(\.\d)? s/);
      await noSidewaysPage();
      await screenshot("03-channels", width);
    });

    it(`opens an account's page with balance, keys, statement and usage, and a failed request's detail, at ${width} px`, async () => {
      await page.locator(".tabs").getByRole("link", { name: "Accounts" }).click();
      await page.locator(`tr[data-account-email="${USER.email}"]`).getByRole("link", { name: USER.email }).click();
      await page.locator('[data-testid="account-title"]', { hasText: USER.email }).waitFor();
      await page.locator('[data-testid="account-keys"]').getByText("backend").waitFor();
      await page.locator('[data-testid="account-statement"]').getByText("invoice 12").waitFor();
      await noSidewaysPage();
      await screenshot("04-account", width);

      await page.locator(`tr[data-request-id="${ids.failed}"]`).click();
      const detail = page.locator('[data-testid="request-detail"]');
      await expect.poll(() => detail.locator('[data-testid="request-error"]').textContent()).toContain("[sandbox:fail]");
      expect(await detail.textContent()).toContain("Latency");
      await noSidewaysPage();
      await screenshot("05-account-request-failed", width);
    });
  }

  it("tops an account up by a micro-dollar and adjusts it by a signed amount, both in its statement", async () => {
    await openPage(1280);
    await signIn("admin@orvado.local", adminPassword);
    await page.goto(`/console/admin/accounts/${userId}`);
    const balance = page.locator('[data-testid="account-balance"]');
    await expect.poll(() => balance.textContent()).toBe("$4.96");
    await page.getByRole("button", { name: "Top up" }).click();
    let dialog = page.getByRole("dialog");
    await dialog.locator('input[name="usd"]').fill("0.000001");
    await dialog.locator('input[name="note"]').fill("rounding credit");
    await dialog.getByRole("button", { name: "Add funds" }).click();
    await dialog.waitFor({ state: "detached" });
    await expect.poll(() => balance.textContent()).toBe("$4.960001");

    await page.getByRole("button", { name: "Adjust balance" }).click();
    dialog = page.getByRole("dialog");
    await dialog.locator('input[name="usd"]').fill("-1.5");
    await dialog.locator('input[name="note"]').fill("refund of a duplicate top-up");
    await dialog.getByRole("button", { name: "Adjust balance" }).click();
    await dialog.waitFor({ state: "detached" });
    await expect.poll(() => balance.textContent()).toBe("$3.460001");
    const adjustment = page.locator('[data-testid="account-statement"] tr', { hasText: "refund of a duplicate top-up" });
    await adjustment.waitFor();
    expect(await adjustment.textContent()).toContain("−$1.50");
    await screenshot("06-account-adjusted", 1280);
  });

  for (const width of WIDTHS) {
    it(`shows the user a request's detail with latency, seconds and its image, and tables that fit, at ${width} px`, async () => {
      await openPage(width);
      await signIn(USER.email, USER.password);
      // Dashboard: only charged requests are counted as such.
      await expect.poll(() => page.locator(".card", { hasText: "Spend, last 30 days" }).textContent()).toContain("2 charged requests · 1 not charged");
      await noSidewaysPage();
      await screenshot("07-dashboard", width);

      await page.goto("/console/usage");
      const row = page.locator(`tr[data-request-id="${ids.ok[0]}"]`);
      // Times carry seconds.
      expect(await row.locator("td").first().textContent()).toMatch(/\d{2}:\d{2}:\d{2}/);
      await noSidewaysPage();
      await row.click();
      const detail = page.locator('[data-testid="request-detail"]');
      const image = detail.locator("img");
      await image.waitFor();
      await expect.poll(() => image.evaluate((element) => (element as unknown as { naturalWidth: number }).naturalWidth)).toBe(1024);
      expect(await detail.textContent()).toMatch(/Latency\s*\d/);
      expect(await detail.textContent()).toContain("sandbox");
      await screenshot("08-usage-detail", width);

      // A key needs no name: it is called "default", as the CLI names it.
      await page.goto("/console/tokens");
      await page.getByRole("button", { name: "Create key" }).click();
      await page.locator('[data-testid="new-secret"]').waitFor();
      await page.getByRole("button", { name: "I have saved it" }).click();
      await page.locator('tr[data-key-name="default"]').first().waitFor();
      await noSidewaysPage();
      await screenshot("09-tokens", width);
    });
  }

  it("offers in the playground only the sizes whose tier the model has", async () => {
    await page.goto("/console/playground");
    const size = page.locator('select[name="size"]');
    await page.locator('select[name="model"]').selectOption("alpha-2.5-flare");
    expect(await size.locator('option[value="4096x4096"]').isDisabled()).toBe(false);
    await size.selectOption("4096x4096");
    // beta-2-lite has only 1K: the larger sizes are disabled and the choice falls back to 1024x1024.
    await page.locator('select[name="model"]').selectOption("beta-2-lite");
    for (const value of ["2048x2048", "2560x1440", "4096x4096"]) expect(await size.locator(`option[value="${value}"]`).isDisabled()).toBe(true);
    expect(await size.inputValue()).toBe("1024x1024");
    await page.locator('textarea[name="prompt"]').fill("a slow one [sandbox:delay=1500]");
    await page.getByRole("button", { name: "Generate" }).click();
    await page.getByText("a job may run up to 10 minutes").waitFor();
    await page.locator('[data-testid="playground-result"]').waitFor();
    await screenshot("10-playground", 390);
    expect(pageProblems).toEqual([]);
  });

  it("keeps the price table's columns while a price is edited, at 390 px", async () => {
    await openPage(390);
    await signIn("admin@orvado.local", adminPassword);
    await page.goto("/console/admin/prices");
    const row = page.locator("tr", { has: page.getByText("beta-pro", { exact: true }) }).filter({ hasText: "4K" });
    await row.getByRole("button", { name: "Edit" }).click();
    const editor = page.locator("tr.editing");
    expect(await editor.locator("td").count()).toBe(4);
    await editor.locator('input[name="usd"]').fill("0.200000");
    await editor.locator('input[name="note"]').fill("upstream price");
    await noSidewaysPage();
    await screenshot("11-price-edit", 390);
    await editor.getByRole("button", { name: "Save" }).click();
    await page.locator("tr", { hasText: "upstream price" }).waitFor();
    expect(pageProblems).toEqual([]);
  });
});
