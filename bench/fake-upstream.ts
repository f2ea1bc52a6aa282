// A fake OpenAI-compatible image upstream for the benchmarks: answers
// POST /v1/images/generations with one small PNG, at once or after a set delay.
// Plain node:http so the upstream itself costs as little as possible.
// bench:mix's jobs carry markers in the prompt (mixPrompt): their own delay, a
// job id under which the upstream records its own time (GET /bench/timings), and
// whether the upstream should fail them; the model REFUSED_MODEL is refused.
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

/** The model every gateway must refuse itself; the upstream refuses it too, for the direct leg (400). */
export const REFUSED_MODEL = "unknown-model";

/** What a bench:mix job asks of the upstream through its prompt, which every gateway passes on as it is. */
export interface MixMarkers {
  /** Recorded with the upstream's own time for this job. */
  id: string;
  /** How long the upstream takes before answering. */
  delayMs: number;
  /** The upstream answers 500 after the delay. */
  fails: boolean;
}

export function mixPrompt(text: string, markers: MixMarkers): string {
  return `${text} [job=${markers.id}] [delay-ms=${markers.delayMs}]${markers.fails ? " [fail]" : ""}`;
}

/** The markers of a prompt; a prompt without them (every other bench's) gets no id, the upstream's own delay and no failure. */
export function readMixMarkers(prompt: unknown): Partial<MixMarkers> {
  const text = typeof prompt === "string" ? prompt : "";
  const id = /\[job=([\w-]+)\]/.exec(text)?.[1];
  const delay = /\[delay-ms=(\d+)\]/.exec(text)?.[1];
  return { id, delayMs: delay === undefined ? undefined : Number(delay), fails: text.includes("[fail]") };
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
  // By mix job id: ms from the request's arrival until its 200 answer was ready to send.
  let timings: Record<string, number> = {};

  async function generate(request: IncomingMessage, response: ServerResponse) {
    const arrived = performance.now();
    let body: Record<string, unknown>;
    try {
      body = JSON.parse((await readBody(request)).toString("utf8")) as Record<string, unknown>;
    } catch {
      return sendJson(response, 400, { error: { message: "invalid JSON", type: "invalid_request_error" } });
    }
    if (body.model === REFUSED_MODEL) return sendJson(response, 400, { error: { message: `unknown model ${REFUSED_MODEL}`, type: "invalid_request_error" } });
    const markers = readMixMarkers(body.prompt);
    const delayMs = markers.delayMs ?? latencyMs;
    if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
    if (markers.fails) return sendJson(response, 500, { error: { message: "the fake upstream fails this job, as asked", type: "server_error" } });
    const asUrl = body.response_format === "url";
    const item = asUrl ? { url: `${base}/files/${typeof body.size === "string" ? body.size : "1024x1024"}.png` } : { b64_json: b64Of(await pngFor(body.size)) };
    served += 1;
    if (markers.id !== undefined) timings[markers.id] = performance.now() - arrived;
    sendJson(response, 200, { created: Math.floor(Date.now() / 1000), data: Array.from({ length: imageCount(body) }, () => item) });
  }

  /** The own times recorded since the last call, then forgotten. */
  function takeTimings(response: ServerResponse) {
    const taken = timings;
    timings = {};
    sendJson(response, 200, { timings: taken });
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
    if (request.method === "GET" && path === "/bench/timings") return takeTimings(response);
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
