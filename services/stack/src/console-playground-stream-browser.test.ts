import { afterAll, beforeAll, describe, expect, it } from "vitest";
import Fastify, { type FastifyInstance } from "fastify";
import type { Browser, Page } from "playwright-core";
import { consoleStaticRoutes } from "@orvado/edge/console-static";
import { WIDTHS, launchChromium, noSidewaysPage, screenshot } from "./console-screens.ts";

// The playground while a job runs (issue N item 3, the console's side), in Debian's Chromium
// (playwright-core): the console's own files served by the edge's static routes, its API answered
// by a local HTTP server speaking the shapes the edge speaks: the stream as server-sent events
// (OpenAI's partial_image, completed and error events, the request id in the head) and the job's
// lookup as 202 with `progress` and `preview_url`, or without them as until the server streams
// progress. The test releases each event itself, so every state is seen and photographed.

const REQUEST_ID = "req_AAAAAAAAAAAAAAAAAAAAAA";

/** Solid squares as PNG base64: the two partial images (8 px, red then blue) and the final one (16 px, green). */
const images = {
  first: "iVBORw0KGgoAAAANSUhEUgAAAAgAAAAICAIAAABLbSncAAAACXBIWXMAAAPoAAAD6AG1e1JrAAAAEUlEQVQImWM4oaGBFTEMLQkAgl1GAXRgBQ4AAAAASUVORK5CYII=",
  second: "iVBORw0KGgoAAAANSUhEUgAAAAgAAAAICAIAAABLbSncAAAACXBIWXMAAAPoAAAD6AG1e1JrAAAAEUlEQVQImWPQ0DiBFTEMLQkAMl1GAcPxKOUAAAAASUVORK5CYII=",
  final: "iVBORw0KGgoAAAANSUhEUgAAABAAAAAQCAIAAACQkWg2AAAACXBIWXMAAAPoAAAD6AG1e1JrAAAAGUlEQVQokWPQWGBDEmIY1bBgNJQ0hmvSAAAmYgQQuqt+TAAAAABJRU5ErkJggg==",
};

/** What the fake server does next; the test sets it and releases the stream's events one by one. */
class Script {
  lookup: Record<string, unknown> = {};
  bodies: unknown[] = [];
  #queue: (string | null)[] = [];
  #waiting: ((next: string | null) => void) | null = null;
  #arrived: (() => void) | null = null;

  /** Resolves once the page has posted its request. */
  posted(): Promise<void> {
    return new Promise((resolve) => (this.#arrived = resolve));
  }
  requestArrived(body: unknown) {
    this.bodies.push(body);
    this.#arrived?.();
  }
  /** Sends one event (an OpenAI-shaped object), or ends the stream with null. */
  release(event: ({ type: string } & Record<string, unknown>) | null) {
    const text = event === null ? null : `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;
    if (this.#waiting) {
      this.#waiting(text);
      this.#waiting = null;
    } else this.#queue.push(text);
  }
  next(): Promise<string | null> {
    if (this.#queue.length > 0) return Promise.resolve(this.#queue.shift()!);
    return new Promise((resolve) => (this.#waiting = resolve));
  }
}

let script: Script;
let server: FastifyInstance;
let baseUrl: string;
let browser: Browser;
let page: Page;

async function fakeConsole(): Promise<FastifyInstance> {
  const app = Fastify();
  consoleStaticRoutes(app);
  const account = { id: "acct_pat", email: "pat@example.test", role: "user", disabled: false, limits: { maxConcurrentJobs: null, requestsPerMinute: null }, passwordGenerated: false };
  app.get("/console/api/me", async () => ({ account, csrfToken: "csrf-token" }));
  app.get("/console/api/models", async () => ({ models: [{ id: "alpha-2.5-flare", family: "alpha", tiers: ["1K"], sandbox: false, prices: { "1K": "0.040000" } }] }));
  app.post("/console/api/playground", (request, reply) => {
    script.requestArrived(request.body);
    reply.hijack();
    reply.raw.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "x-gateway-request-id": REQUEST_ID, "cache-control": "no-store" });
    reply.raw.write(": keep-alive\n\n");
    const pump = async () => {
      for (let text = await script.next(); text !== null; text = await script.next()) reply.raw.write(text);
      reply.raw.end();
    };
    void pump();
  });
  app.get("/console/api/playground/:id", async (_request, reply) => reply.code(202).send({ id: REQUEST_ID, object: "image.generation", status: "running", created: 1, ...script.lookup }));
  app.get("/console/api/usage/:id", async () => ({ requestId: REQUEST_ID, status: "charged", amountUsd: "0.040000", amountMicros: "40000", tier: "1K", model: "alpha-2.5-flare" }));
  await app.listen({ host: "127.0.0.1", port: 0 });
  return app;
}

async function openPlayground(width: number) {
  await page?.context().close();
  const context = await browser.newContext({ viewport: { width, height: 900 }, baseURL: baseUrl });
  page = await context.newPage();
  page.setDefaultTimeout(15_000);
  page.on("pageerror", (error) => {
    throw error;
  });
  await page.goto("/console/playground");
  await page.locator('textarea[name="prompt"]').fill("a lighthouse at dawn");
}

const progress = () => page.locator('[data-testid="playground-progress"]');
const preview = () => page.locator('[data-testid="playground-preview"]');

beforeAll(async () => {
  server = await fakeConsole();
  const address = server.server.address();
  baseUrl = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
});

describe("the playground's progress bar and live preview (canned event stream over HTTP)", { timeout: 60_000 }, () => {
  for (const width of WIDTHS) {
    it(`fills the bar from the lookup's progress and shows each partial image, then the result, at ${width} px`, async () => {
      script = new Script();
      await openPlayground(width);
      const posted = script.posted();
      await page.getByRole("button", { name: "Generate" }).click();
      await posted;
      expect(script.bodies[0]).toMatchObject({ model: "alpha-2.5-flare", prompt: "a lighthouse at dawn", stream: true, partial_images: 2 });

      script.lookup = { progress: 0.25 };
      // The page asks the lookup every 1.5 s.
      await expect.poll(() => progress().getAttribute("aria-valuenow"), { timeout: 5_000 }).toBe("25");
      expect(await page.getByTestId("playground-percent").textContent()).toBe("25%");

      script.release({ type: "image_generation.partial_image", b64_json: images.first, partial_image_index: 0, output_format: "png" });
      await expect.poll(() => preview().getAttribute("src")).toBe(`data:image/png;base64,${images.first}`);
      script.lookup = { progress: 0.6 };
      script.release({ type: "image_generation.partial_image", b64_json: images.second, partial_image_index: 1, output_format: "png" });
      await expect.poll(() => preview().getAttribute("src")).toBe(`data:image/png;base64,${images.second}`);
      await expect.poll(() => progress().getAttribute("aria-valuenow"), { timeout: 5_000 }).toBe("60");
      expect(await page.getByTestId("playground-live").textContent()).toContain("Preview 2 of up to 2");
      await noSidewaysPage(page);
      await screenshot(page, "playground-running");

      script.release({ type: "image_generation.completed", b64_json: images.final, output_format: "png", size: "16x16", usage: { total_tokens: 0 } });
      script.release(null);
      const result = page.locator('[data-testid="playground-result"]');
      await expect.poll(() => result.locator("img").first().evaluate((element) => (element as unknown as { naturalWidth: number }).naturalWidth)).toBe(16);
      expect(await result.getByTestId("playground-request-id").textContent()).toBe(REQUEST_ID);
      await expect.poll(() => result.getByTestId("playground-cost").textContent()).toBe("$0.04");
      expect(await progress().count()).toBe(0);
      await screenshot(page, "playground-result");
    });
  }

  it("falls back to a moving bar and the seconds counter when the lookup has no progress and no partial image comes", async () => {
    script = new Script();
    await openPlayground(1366);
    const posted = script.posted();
    await page.getByRole("button", { name: "Generate" }).click();
    await posted;
    await progress().waitFor();
    expect(await progress().getAttribute("class")).toContain("indeterminate");
    expect(await progress().getAttribute("aria-valuenow")).toBeNull();
    // The counter runs: two different readings, a second apart at least.
    const first = await page.getByTestId("playground-seconds").textContent();
    await expect.poll(() => page.getByTestId("playground-seconds").textContent(), { timeout: 5_000 }).not.toBe(first);
    expect(await preview().count()).toBe(0);
    expect(await page.getByTestId("playground-live").textContent()).toContain("a job may run up to 10 minutes");
    await screenshot(page, "playground-waiting");

    script.release({ type: "image_generation.completed", b64_json: images.final, output_format: "png", size: "16x16", usage: { total_tokens: 0 } });
    script.release(null);
    await page.locator('[data-testid="playground-result"] img').waitFor();
  });

  it("shows an error event's message and code, and that nothing was charged", async () => {
    script = new Script();
    await openPlayground(390);
    const posted = script.posted();
    await page.getByRole("button", { name: "Generate" }).click();
    await posted;
    const message = `The model failed the job (request id: ${REQUEST_ID})`;
    script.release({ type: "error", error: { message, type: "gateway_error", code: "async_image_failed" } });
    script.release(null);
    const alert = page.getByRole("alert");
    await expect.poll(() => alert.textContent()).toContain(message);
    expect(await alert.textContent()).toContain("(async_image_failed)");
    expect(await alert.textContent()).toContain("not charged");
    await noSidewaysPage(page);
    await screenshot(page, "playground-failed");
  });
});
