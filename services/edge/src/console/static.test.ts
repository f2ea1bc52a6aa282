import Fastify, { type FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { consoleStaticRoutes } from "./static.ts";

// The console's files over real HTTP: the app for every page path, vendor modules the browser can
// load without a build step, a strict CSP, and 404s (never index.html) for missing files and API paths.

let app: FastifyInstance;
let base: string;

beforeAll(async () => {
  app = Fastify();
  consoleStaticRoutes(app, { publicUrl: "https://images.example.test/base" });
  base = await app.listen({ host: "127.0.0.1", port: 0 });
});
afterAll(async () => {
  await app?.close();
});

// Static import statements only (they start a line; the vendor builds are one line each).
const IMPORT = /^\s*(?:import|export)\b[^;"'\n]*?\bfrom\s*["']([^"']+)["']/gm;

/** Every module the app loads, found by following its imports from /console/app.js. */
async function moduleGraph(): Promise<Map<string, Response>> {
  const seen = new Map<string, Response>();
  const queue = [`${base}/console/app.js`];
  while (queue.length > 0) {
    const url = queue.shift()!;
    if (seen.has(url)) continue;
    const response = await fetch(url);
    seen.set(url, response);
    const source = await response.clone().text();
    for (const [, specifier] of source.matchAll(IMPORT)) queue.push(new URL(specifier!, url).href);
  }
  return seen;
}

describe("the console's static files", () => {
  it("answers /console and every page path with the app's index.html, uncached, under a strict CSP", async () => {
    for (const path of ["/console", "/console/", "/console/usage", "/console/admin/prices", "/console/sign-in?next=1"]) {
      const response = await fetch(base + path);
      expect(response.status, path).toBe(200);
      expect(response.headers.get("content-type")).toBe("text/html; charset=utf-8");
      expect(response.headers.get("cache-control")).toBe("no-cache");
      const csp = response.headers.get("content-security-policy")!;
      expect(csp).toContain("default-src 'none'");
      expect(csp).toContain("script-src 'self';");
      expect(csp).toContain("img-src 'self' data: blob: https://images.example.test;");
      expect(csp).not.toContain("unsafe");
      expect(response.headers.get("x-content-type-options")).toBe("nosniff");
      expect(await response.text()).toContain('<script type="module" src="/console/app.js"></script>');
    }
  });

  it("has no inline script or style in index.html", async () => {
    const page = await (await fetch(`${base}/console`)).text();
    const scripts = [...page.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)];
    expect(scripts.length).toBeGreaterThan(0);
    for (const [, attributes, body] of scripts) {
      expect(attributes).toMatch(/\bsrc="/);
      expect(body!.trim()).toBe("");
    }
    expect(page).not.toMatch(/<style\b|\sstyle="|\son[a-z]+="/i);
  });

  it("serves preact, its hooks and htm as browser ES modules, cached for long", async () => {
    const preact = await fetch(`${base}/console/vendor/preact.mjs`);
    expect(preact.status).toBe(200);
    expect(preact.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    expect(preact.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
    expect(await preact.text()).toMatch(/export\s*\{/);

    const hooks = await (await fetch(`${base}/console/vendor/hooks.mjs`)).text();
    expect(hooks).toContain('from"./preact.mjs"');
    expect(hooks).not.toMatch(/from\s*["']preact["']/);
    expect(hooks).not.toContain("sourceMappingURL");

    const htm = await fetch(`${base}/console/vendor/htm.mjs`);
    expect(htm.status).toBe(200);
    expect(await htm.text()).toMatch(/export\s*\{?\s*\w+ as default|export default/);
  });

  it("serves every module the app imports, each as JavaScript", async () => {
    const graph = await moduleGraph();
    expect(graph.size).toBeGreaterThan(10);
    for (const [url, response] of graph) {
      expect(response.status, url).toBe(200);
      expect(response.headers.get("content-type"), url).toBe("text/javascript; charset=utf-8");
    }
    const css = await fetch(`${base}/console/app.css`);
    expect([css.status, css.headers.get("content-type")]).toEqual([200, "text/css; charset=utf-8"]);
  });

  it("answers a matching If-None-Match with 304", async () => {
    const first = await fetch(`${base}/console/app.js`);
    const etag = first.headers.get("etag")!;
    expect(etag).toMatch(/^"[\w-]+"$/);
    const again = await fetch(`${base}/console/app.js`, { headers: { "if-none-match": etag } });
    expect(again.status).toBe(304);
  });

  it("answers a missing file and an unknown API path with a 404 in the documented error shape", async () => {
    for (const path of ["/console/nope.js", "/console/..%2f..%2fpackage.json", "/console/api/nope", "/console/api"]) {
      const response = await fetch(base + path);
      expect(response.status, path).toBe(404);
      const body = (await response.json()) as { error: { code: string; type: string; message: string } };
      expect(body.error.code).toBe("not_found");
      expect(body.error.type).toBe("gateway_error");
      expect(body.error.message).toMatch(/\(request id: .+\)$/);
    }
  });
});
