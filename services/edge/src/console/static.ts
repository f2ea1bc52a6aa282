// The console's single-page app: its own files from services/edge/console, the preact, htm and
// eventsource-parser ES modules from node_modules (no build step), and index.html for every other /console path so a deep
// link such as /console/usage loads the app. /console/api/* belongs to the JSON API, never to this.
import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, extname, join, relative, sep } from "node:path";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { ErrorCode } from "@orvado/proto";
import { sendError } from "../reply.ts";
import { EDGE_ROOT } from "../service-root.ts";

interface Asset {
  body: Buffer;
  type: string;
  etag: string;
  cacheControl: string;
}

export interface ConsoleStaticOptions {
  /** Base of image links when it differs from the console's own origin (playground images). */
  publicUrl?: string | undefined;
  /** Where the app's files live (tests may point elsewhere). */
  appDir?: string;
}

const APP_DIR = join(EDGE_ROOT, "console");

// A Map: file names are looked up by their extension, and only own entries may match.
const TYPES = new Map<string, string>([
  [".html", "text/html; charset=utf-8"],
  [".js", "text/javascript; charset=utf-8"],
  [".mjs", "text/javascript; charset=utf-8"],
  [".css", "text/css; charset=utf-8"],
  [".svg", "image/svg+xml"],
  [".png", "image/png"],
  [".ico", "image/x-icon"],
  [".txt", "text/plain; charset=utf-8"],
]);

// The app's own files change with every deploy under the same names: the browser must revalidate
// (cheap thanks to the ETag). Vendor modules are pinned by the lock file and never change in place.
const REVALIDATE = "no-cache";
const LONG_CACHE = "public, max-age=31536000, immutable";

function asset(body: Buffer, type: string, cacheControl: string): Asset {
  const etag = `"${createHash("sha256").update(body).digest("base64url").slice(0, 27)}"`;
  return { body, type, etag, cacheControl };
}

function listFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return listFiles(path);
    return entry.isFile() ? [path] : [];
  });
}

/** Every file of the app, keyed by its path under /console/ ("app.js", "pages/usage.js", …). */
function loadAppFiles(appDir: string): Map<string, Asset> {
  const assets = new Map<string, Asset>();
  for (const file of listFiles(appDir)) {
    const type = TYPES.get(extname(file));
    if (type === undefined) continue; // only known web types leave the server
    const path = relative(appDir, file).split(sep).join("/");
    assets.set(path, asset(readFileSync(file), type, REVALIDATE));
  }
  if (!assets.has("index.html")) throw new Error(`the console app has no index.html in ${appDir}`);
  return assets;
}

const require = createRequire(import.meta.url);
/** The ES module build that sits beside a package entry's CommonJS build (htm exports no package.json). */
const esmBeside = (specifier: string, file: string) => join(dirname(require.resolve(specifier)), file);

/** A vendor ES module as the browser can load it: the bare "preact" import made relative, no source map link. */
function vendorModule(file: string): Buffer {
  const source = readFileSync(file, "utf8")
    .replace(/from\s*(["'])preact\1/g, 'from"./preact.mjs"')
    .replace(/\n?\/\/# sourceMappingURL=\S+\s*$/, "\n");
  if (/from\s*["']preact[/"']/.test(source)) throw new Error(`${file} still imports "preact" by a bare name`);
  return Buffer.from(source);
}

function loadVendorFiles(): Map<string, Asset> {
  const files: Record<string, string> = {
    "vendor/preact.mjs": esmBeside("preact", "preact.mjs"),
    "vendor/hooks.mjs": esmBeside("preact/hooks", "hooks.mjs"),
    "vendor/htm.mjs": esmBeside("htm", "htm.mjs"),
    // The playground's event stream reader (console/lib/events.js); the package's ES build imports nothing.
    "vendor/eventsource-parser.mjs": esmBeside("eventsource-parser", "index.js"),
  };
  const assets = new Map<string, Asset>();
  for (const [path, file] of Object.entries(files)) assets.set(path, asset(vendorModule(file), TYPES.get(".mjs")!, LONG_CACHE));
  return assets;
}

/** No inline script or style anywhere: everything comes from this origin (images also from the public URL). */
export function contentSecurityPolicy(publicUrl?: string): string {
  const imageOrigins = ["'self'", "data:", "blob:"];
  if (publicUrl) imageOrigins.push(new URL(publicUrl).origin);
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    `img-src ${imageOrigins.join(" ")}`,
    "connect-src 'self'",
    "font-src 'self'",
    "manifest-src 'self'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
    "object-src 'none'",
  ].join("; ");
}

function send(request: FastifyRequest, reply: FastifyReply, file: Asset, csp: string) {
  reply
    .header("content-security-policy", csp)
    .header("x-content-type-options", "nosniff")
    .header("x-frame-options", "DENY")
    .header("referrer-policy", "same-origin")
    .header("cache-control", file.cacheControl)
    .header("etag", file.etag);
  if (request.headers["if-none-match"] === file.etag) return reply.code(304).send();
  return reply.type(file.type).send(file.body);
}

export function consoleStaticRoutes(app: FastifyInstance, options: ConsoleStaticOptions = {}) {
  const assets = new Map([...loadAppFiles(options.appDir ?? APP_DIR), ...loadVendorFiles()]);
  const index = assets.get("index.html")!;
  const csp = contentSecurityPolicy(options.publicUrl);

  app.get("/console", (request, reply) => send(request, reply, index, csp));
  app.get("/console/*", (request, reply) => {
    const path = (request.params as { "*": string })["*"];
    if (path === "api" || path.startsWith("api/")) {
      return sendError(request, reply, ErrorCode.NOT_FOUND, `No route ${request.method} ${request.url.split("?")[0]}`);
    }
    const file = assets.get(path);
    if (file) return send(request, reply, file, csp);
    // A missing file (it has an extension) is a 404; any other path is a page of the app.
    if (extname(path) !== "") return sendError(request, reply, ErrorCode.NOT_FOUND, `No console file /console/${path}`);
    return send(request, reply, index, csp);
  });
}
