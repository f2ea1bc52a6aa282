// GET /openapi.json (the document of document.ts) and GET /docs, a Swagger UI viewer of
// it. The viewer's files come from the swagger-ui-dist package in node_modules, read
// once at start: nothing is loaded from a CDN, and the page runs no inline script.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { ErrorCode } from "@orvado/proto";
import { sendError } from "../reply.ts";
import { OPENAPI_DOCUMENT } from "./document.ts";

interface Asset {
  body: Buffer;
  type: string;
  etag: string;
}

const asset = (body: Buffer | string, type: string): Asset => {
  const bytes = Buffer.from(body);
  return { body: bytes, type, etag: `"${createHash("sha256").update(bytes).digest("base64url").slice(0, 27)}"` };
};

const require = createRequire(import.meta.url);
const SWAGGER_UI_DIR = dirname(require.resolve("swagger-ui-dist/package.json"));

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Orvado API</title>
<link rel="stylesheet" href="/docs/swagger-ui.css">
<link rel="icon" type="image/png" href="/docs/favicon-32x32.png">
</head>
<body>
<div id="swagger-ui"></div>
<script src="/docs/swagger-ui-bundle.js"></script>
<script src="/docs/init.js"></script>
</body>
</html>
`;

// In its own file, since the page allows no inline script.
const INIT = `window.ui = SwaggerUIBundle({ url: "/openapi.json", dom_id: "#swagger-ui", deepLinking: true, presets: [SwaggerUIBundle.presets.apis] });\n`;

function loadAssets(): Map<string, Asset> {
  const vendor = (file: string, type: string) => asset(readFileSync(join(SWAGGER_UI_DIR, file)), type);
  return new Map([
    ["swagger-ui.css", vendor("swagger-ui.css", "text/css; charset=utf-8")],
    ["swagger-ui-bundle.js", vendor("swagger-ui-bundle.js", "text/javascript; charset=utf-8")],
    ["favicon-32x32.png", vendor("favicon-32x32.png", "image/png")],
    ["init.js", asset(INIT, "text/javascript; charset=utf-8")],
  ]);
}

/**
 * Scripts and styles from this origin only. Swagger UI sets style attributes on its
 * elements, so styles may be inline; scripts may not. The schema's images are data: URLs.
 */
const DOCS_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "font-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

function send(request: FastifyRequest, reply: FastifyReply, file: Asset) {
  reply.header("content-security-policy", DOCS_CSP).header("x-content-type-options", "nosniff").header("cache-control", "no-cache").header("etag", file.etag);
  if (request.headers["if-none-match"] === file.etag) return reply.code(304).send();
  return reply.type(file.type).send(file.body);
}

export function openApiRoutes(app: FastifyInstance) {
  const document = asset(JSON.stringify(OPENAPI_DOCUMENT), "application/json; charset=utf-8");
  const page = asset(PAGE, "text/html; charset=utf-8");
  const assets = loadAssets();
  app.get("/openapi.json", (request, reply) => send(request, reply, document));
  app.get("/docs", (request, reply) => send(request, reply, page));
  app.get<{ Params: { file: string } }>("/docs/:file", (request, reply) => {
    const file = assets.get(request.params.file);
    return file ? send(request, reply, file) : sendError(request, reply, ErrorCode.NOT_FOUND, `No file /docs/${request.params.file.slice(0, 100)}`);
  });
}
