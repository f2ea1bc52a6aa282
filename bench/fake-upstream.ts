// A fake OpenAI-compatible image upstream for the benchmarks: answers
// POST /v1/images/generations with one small PNG, at once or after a set delay.
// Plain node:http so the upstream itself costs as little as possible.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { randomBytes } from "node:crypto";
import sharp from "sharp";
import { readBody } from "./http-body.ts";

export interface FakeUpstream {
  url: string;
  port: number;
  /** Requests answered so far (successful generations). */
  served(): number;
  close(): Promise<void>;
}

export interface FakeUpstreamOptions {
  port?: number;
  host?: string;
  /** Delay before answering each generation (0 = immediately). */
  latencyMs?: number;
  /** "solid" (default): one colour, a few kB; "photo": noise, as large as a photo's PNG (about 3.3 MB at 1024x1024, 13 MB at 2048x2048, 27 MB at 4096x4096). */
  image?: "solid" | "photo";
}

/**
 * A photo's PNG takes about 3 bytes a pixel up to 2048x2048 but only about 1.5 at
 * 4096x4096 (about 25 MB): noise (which PNG cannot compress) fills the rows up to
 * that many bytes, the rest is one grey.
 */
const PHOTO_NOISE_MAX_BYTES = 25_000_000;

function photoPixels(width: number, height: number): Buffer {
  const pixels = Buffer.alloc(width * height * 3, 128);
  const noiseRows = Math.min(height, Math.max(1, Math.floor(PHOTO_NOISE_MAX_BYTES / (width * 3))));
  randomBytes(noiseRows * width * 3).copy(pixels);
  return pixels;
}

/**
 * A real PNG of the asked size, rendered once per size: a solid colour, so even
 * 1024x1024 is a few kilobytes, or noise, which PNG cannot compress, so it is as
 * large as a photo's. Exact sizes mean a gateway that checks the pixels (Orvado
 * does) has nothing to resize, as with a well-behaved upstream.
 */
function pngMaker(image: "solid" | "photo") {
  const made = new Map<string, Promise<Buffer>>();
  return (size: unknown): Promise<Buffer> => {
    const match = typeof size === "string" ? /^(\d{1,4})x(\d{1,4})$/.exec(size) : null;
    const [width, height] = match ? [Number(match[1]), Number(match[2])] : [1024, 1024];
    const key = `${width}x${height}`;
    if (!made.has(key)) {
      const [w, h] = [Math.max(1, width), Math.max(1, height)];
      const pixels = image === "photo" ? sharp(photoPixels(w, h), { raw: { width: w, height: h, channels: 3 } }) : sharp({ create: { width: w, height: h, channels: 3, background: { r: 200, g: 80, b: 40 } } });
      made.set(key, pixels.png({ compressionLevel: image === "photo" ? 1 : 6 }).toBuffer());
    }
    return made.get(key)!;
  };
}

function sendJson(response: ServerResponse, status: number, body: unknown) {
  const text = JSON.stringify(body);
  response.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
  response.end(text);
}

function imageCount(body: Record<string, unknown>): number {
  return typeof body.n === "number" && Number.isInteger(body.n) && body.n > 0 && body.n <= 10 ? body.n : 1;
}

export async function startFakeUpstream(options: FakeUpstreamOptions = {}): Promise<FakeUpstream> {
  const pngFor = pngMaker(options.image ?? "solid");
  const base64 = new Map<Buffer, string>();
  const b64Of = (png: Buffer) => base64.get(png) ?? base64.set(png, png.toString("base64")).get(png)!;
  const latencyMs = options.latencyMs ?? 0;
  const host = options.host ?? "127.0.0.1";
  let served = 0;
  let base = "";

  async function generate(request: IncomingMessage, response: ServerResponse) {
    let body: Record<string, unknown>;
    try {
      body = JSON.parse((await readBody(request)).toString("utf8")) as Record<string, unknown>;
    } catch {
      return sendJson(response, 400, { error: { message: "invalid JSON", type: "invalid_request_error" } });
    }
    if (latencyMs > 0) await new Promise((resolve) => setTimeout(resolve, latencyMs));
    const asUrl = body.response_format === "url";
    const item = asUrl ? { url: `${base}/files/${typeof body.size === "string" ? body.size : "1024x1024"}.png` } : { b64_json: b64Of(await pngFor(body.size)) };
    served += 1;
    sendJson(response, 200, { created: Math.floor(Date.now() / 1000), data: Array.from({ length: imageCount(body) }, () => item) });
  }

  const server: Server = createServer((request, response) => {
    const path = (request.url ?? "/").split("?")[0];
    if (request.method === "POST" && path === "/v1/images/generations") {
      generate(request, response).catch(() => response.destroy());
      return;
    }
    const file = /^\/files\/(\d+x\d+)\.png$/.exec(path ?? "");
    if (request.method === "GET" && file) {
      pngFor(file[1]).then((png) => {
        response.writeHead(200, { "content-type": "image/png", "content-length": png.length });
        response.end(png);
      }, () => response.destroy());
      return;
    }
    if (request.method === "GET" && path === "/v1/models") return sendJson(response, 200, { object: "list", data: [] });
    sendJson(response, 404, { error: { message: `no route ${request.method} ${path}`, type: "invalid_request_error" } });
  });
  // Long-held requests (the soak) must not be cut by Node's defaults.
  server.requestTimeout = 0;
  server.headersTimeout = 0;
  server.keepAliveTimeout = 60_000;
  server.maxConnections = Infinity;
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, host, resolve));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  base = `http://${host}:${port}`;
  return {
    url: base,
    port,
    served: () => served,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
