import { existsSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chromium } from "playwright-core";
import { OPENAPI_DOCUMENT } from "@orvado/edge/openapi";
import { startTestStack, type TestStack } from "./harness.ts";

// Issue I item 4 in a real browser: Debian's Chromium driven by playwright-core over real
// HTTP against the whole stack renders the OpenAPI viewer at /docs from this origin only.
// vitest.config.ts runs this file only where Chromium is installed (libs/testkit/src/browser-suites.ts).

const CHROMIUM = process.env.CONSOLE_TEST_CHROMIUM ?? "/usr/bin/chromium";
let stack: TestStack;

beforeAll(async () => {
  stack = await startTestStack();
});
afterAll(async () => {
  await stack?.close();
});

describe("/docs", () => {
  it("renders every operation of the document in Chromium, with no page error or CSP refusal", { timeout: 120_000 }, async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`Chromium is not installed at ${CHROMIUM} (apt-get install -y chromium)`);
    const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox", "--disable-gpu"] });
    try {
      const page = await browser.newPage();
      const problems: string[] = [];
      const external: string[] = [];
      page.on("pageerror", (error) => problems.push(error.message));
      page.on("console", (message) => message.type() === "error" && problems.push(`${message.text()} ${message.location().url}`));
      page.on("request", (request) => !request.url().startsWith(stack.edgeUrl) && !request.url().startsWith("data:") && external.push(request.url()));
      await page.goto(`${stack.edgeUrl}/docs`);
      await page.getByText("Orvado image generation API").first().waitFor();
      const operations = await page.locator(".opblock-summary-path").allTextContents();
      // Swagger UI lists the webhooks (OpenAPI 3.1 `webhooks`, docs/api.md#webhooks) as operations too, under their names.
      const entries = [...Object.entries(OPENAPI_DOCUMENT.paths), ...Object.entries(OPENAPI_DOCUMENT.webhooks ?? {})];
      const documented = entries.flatMap(([path, item]) => Object.keys(item).map(() => path));
      expect(operations.map((text) => text.replace(/\u200b/g, "")).sort()).toEqual(documented.sort());
      expect(problems).toEqual([]);
      expect(external).toEqual([]);
    } finally {
      await browser.close();
    }
  });
});
