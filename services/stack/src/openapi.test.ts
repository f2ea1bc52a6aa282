import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { validate } from "@readme/openapi-parser";
import { OPENAPI_DOCUMENT, PUBLIC_ERROR_CODES } from "@orvado/edge/openapi";
import { Ajv2020 } from "ajv/dist/2020.js";
import { codeText } from "@orvado/core";
import { checkCatalogField, checkRequestFields } from "@orvado/core/image-request";
import { startTestStack, type TestStack } from "./harness.ts";
import { openApiProblems, openApiViolations, validatingFetch } from "./openapi-validation.ts";

// Issue I item 4 over real HTTP (the whole stack, gRPC between the services): the
// OpenAPI document served at /openapi.json is valid OpenAPI 3.1, and its viewer at
// /docs loads from this origin only (no CDN); openapi-browser.test.ts renders it in Chromium.

let stack: TestStack;

// This suite's own calls are validated against the document too.
const fetch = validatingFetch();
afterEach(() => {
  expect(openApiViolations.splice(0)).toEqual([]);
});

beforeAll(async () => {
  stack = await startTestStack();
});
afterAll(async () => {
  await stack?.close();
});

describe("/openapi.json", () => {
  it("is the document of services/edge, and valid OpenAPI 3.1", async () => {
    const response = await fetch(`${stack.edgeUrl}/openapi.json`);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^application\/json/);
    // biome-ignore lint/suspicious/noExplicitAny: the test reads fields of a JSON answer whose shape it asserts
    const served = (await response.json()) as any;
    expect(served).toEqual(JSON.parse(JSON.stringify(OPENAPI_DOCUMENT)));
    expect(served.openapi).toBe("3.1.0");
    const result = await validate(served);
    expect(result.valid ? [] : result.errors).toEqual([]);
  });

  it("a broken document is refused by the same check (the check can fail)", async () => {
    const broken = JSON.parse(JSON.stringify(OPENAPI_DOCUMENT));
    broken.paths["/v1/models"].get.responses["200"] = { content: {} }; // a response needs a description
    expect((await validate(broken)).valid).toBe(false);
  });

  it("lists every error code with its status, and the operations the issue names", () => {
    const codes = (OPENAPI_DOCUMENT.components.schemas.Error as { properties: { error: { properties: { code: { enum: string[] } } } } }).properties.error.properties.code.enum;
    expect(codes).toEqual(PUBLIC_ERROR_CODES.map(codeText));
    for (const code of codes) expect(OPENAPI_DOCUMENT.info.description).toContain(`| \`${code}\` |`);
    const paths = OPENAPI_DOCUMENT.paths as Record<string, Record<string, unknown>>;
    expect(Object.keys(paths["/v1/images/generations"]!)).toEqual(["post"]);
    expect(Object.keys(paths["/v1/images/generations/{request_id}"]!)).toEqual(["get"]);
    expect(Object.keys(paths["/v1/images/edits"]!)).toEqual(["post"]);
    expect(Object.keys(paths["/v1/models/{model}"]!)).toEqual(["get"]);
    expect(Object.keys(paths["/api/cost/request/{request_id}"]!)).toEqual(["get"]);
    expect(Object.keys(paths["/v1/files/{file}"]!)).toEqual(["get"]);
    const edits = paths["/v1/images/edits"]!.post as { requestBody: { content: Record<string, unknown> }; responses: Record<string, { description: string }> };
    expect(Object.keys(edits.requestBody.content)).toEqual(["multipart/form-data"]);
    expect(edits.responses["400"]!.description).toContain("`edits_not_available`");
  });

  it("documents stream and partial_images on both POSTs, their text/event-stream answer, and a running job's progress", async () => {
    const served = (await (await fetch(`${stack.edgeUrl}/openapi.json`)).json()) as typeof OPENAPI_DOCUMENT;
    const schemas = served.components.schemas as Record<string, { properties: Record<string, Record<string, unknown>> }>;
    for (const body of ["ImageGenerationRequest", "ImageEditRequest"]) {
      expect(schemas[body]!.properties.stream).toMatchObject({ default: false });
      expect(schemas[body]!.properties.partial_images).toMatchObject({ default: 0 });
    }
    const paths = served.paths as Record<string, Record<string, { responses: Record<string, { content?: Record<string, unknown> }> }>>;
    for (const path of ["/v1/images/generations", "/v1/images/edits"]) {
      expect(Object.keys(paths[path]!.post!.responses["200"]!.content!)).toEqual(["application/json", "text/event-stream"]);
    }
    expect(Object.keys(schemas.JobRunning!.properties)).toEqual(["id", "object", "status", "created", "progress", "preview_url"]);
  });

  it("documents the async submit on both image POSTs: the Prefer header and the 202 with Location", () => {
    const paths = OPENAPI_DOCUMENT.paths as Record<string, Record<string, { parameters: { name: string; in: string }[]; responses: Record<string, { headers: Record<string, { required?: boolean }> }> }>>;
    for (const path of ["/v1/images/generations", "/v1/images/edits"]) {
      const post = paths[path]!.post!;
      expect(post.parameters.map((parameter) => `${parameter.in}:${parameter.name}`), path).toEqual(["header:Idempotency-Key", "header:Prefer"]);
      const accepted = post.responses["202"]!;
      expect(accepted.headers.Location?.required, path).toBe(true);
      expect(accepted.headers["Preference-Applied"]?.required, path).toBe(true);
      expect(accepted.headers["Retry-After"], path).toBeDefined();
    }
  });
});

describe("the request bodies of /openapi.json", () => {
  // Derived from the request's contract (libs/core/src/image-request): the served
  // document refuses what the edge and generation refuse, field by field. The rules
  // between fields (output_compression with png) are the checker's alone.
  const bodies: Record<string, unknown>[] = [
    {},
    { model: "beta" },
    { model: "beta", prompt: "" },
    { model: "beta", prompt: "x".repeat(32_001) },
    { model: 1, prompt: "x" },
    { model: "beta", prompt: "x", style: "vivid" },
    { model: "beta", prompt: "x", size: 1024 },
    { model: "beta", prompt: "x", quality: "ultra" },
    { model: "beta", prompt: "x", quality: "constructor" },
    { model: "beta", prompt: "x", response_format: "png" },
    { model: "beta", prompt: "x", n: 0 },
    { model: "beta", prompt: "x", n: 11 },
    { model: "beta", prompt: "x", n: 1.5 },
    { model: "beta", prompt: "x", user: "" },
    { model: "beta", prompt: "x", user: "u".repeat(257) },
    { model: "beta", prompt: "x", user: "line\nbreak" },
    { model: "beta", prompt: "x", output_format: "gif", background: "none" },
    { model: "beta", prompt: "x", output_format: "jpeg", output_compression: 101 },
    { model: "beta", prompt: "x", moderation: "high" },
    { model: "beta", prompt: "x", size: null, quality: null, response_format: null, n: null, user: null, output_format: null, output_compression: null, background: null, moderation: null },
    { model: "beta", prompt: "x", size: "2k", quality: "high", response_format: "b64_json", n: 10, user: "u".repeat(256), output_format: "webp", output_compression: 0, background: "auto", moderation: "low" },
  ];
  const contractAccepts = (body: Record<string, unknown>) => {
    const checked = checkRequestFields(body);
    if (!checked.ok) return false;
    return checkCatalogField("prompt", body.prompt).ok && (body.quality === undefined || body.quality === null || checkCatalogField("quality", body.quality).ok);
  };

  it("accept and refuse what the contract's checks do (ajv on the document served over HTTP)", async () => {
    const served = (await (await fetch(`${stack.edgeUrl}/openapi.json`)).json()) as object;
    const ajv = new Ajv2020({ strict: false, validateFormats: false });
    ajv.addSchema(served, "served");
    const validate = ajv.getSchema("served#/components/schemas/ImageGenerationRequest")!;
    const verdicts = bodies.map((body) => [JSON.stringify(body).slice(0, 60), validate(body), contractAccepts(body)]);
    expect(verdicts.filter(([, schema, contract]) => schema !== contract)).toEqual([]);
    expect(verdicts.filter(([, schema]) => schema)).toHaveLength(2);
  });
});

describe("the response validator", () => {
  // It must catch what it exists for, or a green suite means nothing.
  const answer = (status: number, body: unknown, headers: Record<string, string> = {}) =>
    new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json", "x-gateway-request-id": "req_AAAAAAAAAAAAAAAAAAAAAA", "x-request-id": "req_AAAAAAAAAAAAAAAAAAAAAA", ...headers } });
  const url = (path: string) => new URL(`http://127.0.0.1${path}`);
  it("accepts a documented answer", async () => {
    expect(await openApiProblems("GET", url("/v1/models/beta"), answer(200, { id: "beta", object: "model", created: 1, owned_by: "orvado", aliases: [], family: "beta", tiers: ["1K"], edits: false, sandbox: false, channels: [] }))).toEqual([]);
  });
  it("refuses a body off its schema, an undocumented status, a missing request id and a wrong content type", async () => {
    expect(await openApiProblems("GET", url("/v1/models/beta"), answer(200, { id: "beta" }))).not.toEqual([]);
    expect(await openApiProblems("GET", url("/v1/models"), answer(418, {}))).toEqual(["GET /v1/models → 418: status 418 is not documented for GET /v1/models"]);
    const noId = new Response(JSON.stringify({ status: "ok" }), { status: 200, headers: { "content-type": "application/json" } });
    expect(await openApiProblems("GET", url("/healthz"), noId)).toEqual(["GET /healthz → 200: header X-Gateway-Request-Id is missing", "GET /healthz → 200: header x-request-id is missing"]);
    expect(await openApiProblems("GET", url("/healthz"), answer(200, "ok", { "content-type": "text/plain" }))).toHaveLength(1);
    const error = { error: { message: "x (request id: req_AAAAAAAAAAAAAAAAAAAAAA)", type: "gateway_error", code: "no_such_code" } };
    expect(await openApiProblems("GET", url("/v1/models/x"), answer(404, error))).not.toEqual([]);
  });
  it("holds an undocumented path to the catch-all 404", async () => {
    expect(await openApiProblems("GET", url("/v1/nothing"), answer(200, {}))).not.toEqual([]);
    const notFound = { error: { message: "No route (request id: req_AAAAAAAAAAAAAAAAAAAAAA)", type: "gateway_error", code: "not_found" } };
    expect(await openApiProblems("GET", url("/v1/nothing"), answer(404, notFound))).toEqual([]);
  });
});

describe("/docs", () => {
  it("serves the viewer page and its files from this origin, with no inline script", async () => {
    const page = await fetch(`${stack.edgeUrl}/docs`);
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(page.headers.get("content-security-policy")).toContain("script-src 'self'");
    const sources = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((match) => match[1]!);
    expect(sources).toEqual(["/docs/swagger-ui.css", "/docs/favicon-32x32.png", "/docs/swagger-ui-bundle.js", "/docs/init.js"]);
    expect(html).not.toMatch(/<script>[^<]/);
    for (const source of sources) {
      const file = await fetch(`${stack.edgeUrl}${source}`);
      expect(file.status).toBe(200);
      expect((await file.arrayBuffer()).byteLength).toBeGreaterThan(0);
    }
    expect((await fetch(`${stack.edgeUrl}/docs/package.json`)).status).toBe(404);
  });
});
