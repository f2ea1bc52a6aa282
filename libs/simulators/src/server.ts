import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { randomUUID } from "node:crypto";
import { parsePromptDirectives, type SimMode } from "./directives.ts";
import { renderPng } from "./png.ts";

// The shared core of every protocol simulator: an HTTP server on 127.0.0.1, the
// behaviour controls, request counters, and a small file host for the providers
// whose answers are URLs to download.

export interface SimBehaviour {
  mode: SimMode;
  /** Time the "model" takes before an image is ready (sync answer, or ready-to-poll). */
  latencyMs: number;
  /** Polls answered "pending" before the result is ready, in the normal mode. */
  pollsBeforeReady: number;
  /** Polls answered "pending" in the slow-poll mode. */
  slowPolls: number;
  /** HTTP status of a "fail" answer on the sync providers. */
  failStatus: number;
  /** Deliver every image at this size instead of the one asked for (exercises resizing). */
  outputSize?: { width: number; height: number };
  /** When set, a request without this key (in the provider's own header) is answered 401. */
  apiKey?: string;
  /** ComfyUI: sampler steps per job (default: the workflow's own `steps`), each reported as progress with a preview. */
  steps?: number;
  /** ComfyUI: the websocket of the job's client is cut after this many steps (the client must follow the job by its history). */
  dropSocketAtStep?: number;
  /** ComfyUI: the websocket upgrade is refused (503), so the client must follow its jobs by their history. */
  refuseSockets?: boolean;
  /** ComfyUI: every preview frame's image is replaced by this many bytes that are no image (text), or by a JPEG padded to this many bytes. */
  hostilePreviews?: { bytes: number; image: boolean };
  /** ComfyUI: each step's progress message says value and max 1e999 (JSON that parses to Infinity), as the text of a hostile server. */
  infiniteProgress?: boolean;
  /** ComfyUI: this text is sent on the job's websocket before its first step, "{prompt_id}" replaced by the job's id. */
  rawMessage?: string;
}

export const DEFAULT_BEHAVIOUR: SimBehaviour = { mode: "ok", latencyMs: 0, pollsBeforeReady: 1, slowPolls: 8, failStatus: 500 };

export interface SimRequest {
  method: string;
  url: URL;
  headers: IncomingHttpHeaders;
  body: unknown;
  raw: Buffer;
  /** Fires when the client goes away, so a slow or hanging answer stops waiting. */
  closed: AbortSignal;
}

export type SimReply =
  | { status: number; json: unknown; headers?: Record<string, string> }
  | { status: number; bytes: Buffer; contentType: string }
  | { status: number; text: string; contentType: string }
  /** Server-sent events, each frame written as the iterable yields it (it waits between frames itself). */
  | { status: number; events: AsyncIterable<string> }
  | { hang: true };

export interface Route {
  name: string;
  method: "GET" | "POST";
  pattern: RegExp;
  handle(req: SimRequest, match: RegExpExecArray): Promise<SimReply>;
}

/** What one request should do: the programmed behaviour, overridden by the prompt's directives. */
export interface Effective {
  mode: SimMode;
  delayMs: number;
  size?: { width: number; height: number };
}

export interface SimStats {
  requests: number;
  byRoute: Record<string, number>;
  lastBody: unknown;
  lastHeaders: IncomingHttpHeaders | undefined;
  lastPath: string | undefined;
  /** The most API calls (file downloads aside) open at once since the start or the last reset. */
  peakInFlight: number;
  /** The input images and mask of the last request that carried any (an image edit). */
  lastInputs?: { images: number; mask: boolean };
  /** ComfyUI: the last workflow (API format) queued with POST /prompt. */
  lastWorkflow?: Record<string, { class_type: string; inputs: Record<string, unknown> }>;
}

/** One request a protocol chose to record (SimulatorCore.record), for a test's assertions. */
export interface ReceivedRequest {
  route: string;
  body: unknown;
  query: Record<string, string>;
}

const MAX_BODY_BYTES = 64 * 1024 * 1024;
/** Recorded requests kept: bodies may carry base64 images, so only the latest few stay. */
const MAX_RECEIVED = 32;
const MAX_FILES = 2000;

export class SimulatorCore {
  #server: Server | undefined;
  #behaviour: SimBehaviour = { ...DEFAULT_BEHAVIOUR };
  #routes: Route[] = [];
  readonly #files = new Map<string, Buffer>();
  readonly #shutdown = new AbortController();
  #received: ReceivedRequest[] = [];
  #upgrade: ((req: IncomingMessage, socket: Socket, head: Buffer) => void) | undefined;
  stats: SimStats = { requests: 0, byRoute: {}, lastBody: undefined, lastHeaders: undefined, lastPath: undefined, peakInFlight: 0 };
  #inFlight = 0;
  origin = "";

  constructor(
    readonly provider: string,
    /** The path prefix a client's baseURL carries (for example "/v1"). */
    readonly basePath: string,
    /** Reads the API key the way the provider sends it. */
    private readonly readKey: (headers: IncomingHttpHeaders) => string | undefined,
  ) {}

  get baseUrl(): string {
    return `${this.origin}${this.basePath}`;
  }

  get behaviour(): Readonly<SimBehaviour> {
    return this.#behaviour;
  }

  setRoutes(routes: Route[]): void {
    this.#routes = routes;
  }

  /** Takes the server's upgrade requests (a protocol with a websocket); others are refused. */
  onUpgrade(handler: (req: IncomingMessage, socket: Socket, head: Buffer) => void): void {
    this.#upgrade = handler;
  }

  /** Aborts when the simulator closes: work a protocol runs on after its client left, and upgraded sockets, stop then. */
  get closing(): AbortSignal {
    return this.#shutdown.signal;
  }

  behave(change: Partial<SimBehaviour>): void {
    this.#behaviour = { ...this.#behaviour, ...change };
  }

  reset(): void {
    this.#behaviour = { ...DEFAULT_BEHAVIOUR, apiKey: this.#behaviour.apiKey };
    this.stats = { requests: 0, byRoute: {}, lastBody: undefined, lastHeaders: undefined, lastPath: undefined, peakInFlight: this.#inFlight };
    this.#received = [];
  }

  /** Keeps a request for assertions (the latest MAX_RECEIVED); protocols record the calls a test asks about. */
  record(route: string, req: SimRequest): void {
    this.#received.push({ route, body: req.body, query: Object.fromEntries(req.url.searchParams) });
    if (this.#received.length > MAX_RECEIVED) this.#received.shift();
  }

  /** The recorded requests, oldest first; of one route when named. */
  received(route?: string): readonly ReceivedRequest[] {
    return route === undefined ? [...this.#received] : this.#received.filter((request) => request.route === route);
  }

  /** API calls open now: received and not yet answered (or given up by the client). */
  get inFlight(): number {
    return this.#inFlight;
  }

  /** Records an edit's inputs as the protocol received them (stats.lastInputs). */
  sawInputs(images: number, mask: boolean): void {
    this.stats.lastInputs = { images, mask };
  }

  count(route: string): number {
    return this.stats.byRoute[route] ?? 0;
  }

  effective(prompt: unknown): Effective {
    const directives = parsePromptDirectives(typeof prompt === "string" ? prompt : "");
    return {
      mode: directives.mode ?? this.#behaviour.mode,
      delayMs: directives.delayMs ?? this.#behaviour.latencyMs,
      size: directives.size ?? this.#behaviour.outputSize,
    };
  }

  /** A PNG at the size asked for, unless the behaviour or the prompt says to deliver another size. */
  render(asked: { width: number; height: number }, effective: Effective, seed: string): Promise<Buffer> {
    const size = effective.size ?? asked;
    return renderPng(size.width, size.height, seed);
  }

  /** Hosts bytes for download; the URL is outside basePath, as a provider's CDN would be. */
  hostFile(bytes: Buffer, extension = "png"): string {
    const id = `${randomUUID()}.${extension}`;
    this.#files.set(id, bytes);
    if (this.#files.size > MAX_FILES) this.#files.delete(this.#files.keys().next().value!);
    return `${this.origin}/files/${id}`;
  }

  /** Waits, unless the client leaves or the simulator closes first. */
  async wait(ms: number, req: SimRequest): Promise<void> {
    if (ms <= 0) return;
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        req.closed.removeEventListener("abort", done);
        this.#shutdown.signal.removeEventListener("abort", done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      req.closed.addEventListener("abort", done, { once: true });
      this.#shutdown.signal.addEventListener("abort", done, { once: true });
    });
  }

  async listen(port = 0, host = "127.0.0.1"): Promise<void> {
    this.#server = createServer((req, res) => void this.#serve(req, res));
    this.#server.on("upgrade", (req: IncomingMessage, socket: Socket, head: Buffer) => (this.#upgrade ? this.#upgrade(req, socket, head) : socket.destroy()));
    await new Promise<void>((resolve, reject) => {
      this.#server!.once("error", reject);
      // A deep accept queue, as servers meant for bursts have: at the default (511) a burst of thousands
      // of connections overflowed it, and the resets it caused opened the gateway's breakers.
      this.#server!.listen({ port, host, backlog: 4096 }, resolve);
    });
    const address = this.#server.address() as AddressInfo;
    this.origin = `http://${host}:${address.port}`;
  }

  async close(): Promise<void> {
    this.#shutdown.abort();
    const server = this.#server;
    if (!server) return;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeAllConnections();
    await closed;
  }

  async #serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const closed = new AbortController();
    res.on("close", () => closed.abort());
    try {
      const url = new URL(req.url ?? "/", this.origin);
      const raw = await readBody(req);
      if (url.pathname.startsWith("/files/")) return this.#serveFile(url, res);
      const body = parseJson(req.headers["content-type"], raw);
      this.stats.requests += 1;
      this.stats.lastBody = body;
      this.stats.lastHeaders = req.headers;
      this.stats.lastPath = url.pathname;
      const found = this.#match(req.method ?? "GET", url.pathname);
      if (!found) return send(res, { status: 404, json: { error: { message: `no route ${req.method} ${url.pathname}` } } });
      this.stats.byRoute[found.route.name] = (this.stats.byRoute[found.route.name] ?? 0) + 1;
      this.#countOpen(res);
      const expected = this.#behaviour.apiKey;
      if (expected !== undefined && this.readKey(req.headers) !== expected) {
        return send(res, { status: 401, json: { error: { message: "invalid api key", type: "invalid_request_error", code: "invalid_api_key" } } });
      }
      const reply = await found.route.handle({ method: req.method ?? "GET", url, headers: req.headers, body, raw, closed: closed.signal }, found.match);
      if ("hang" in reply) return hang(res, this.#shutdown.signal);
      if ("events" in reply) return await sendEvents(res, reply);
      send(res, reply);
    } catch (error) {
      send(res, { status: 500, json: { error: { message: `simulator error: ${(error as Error).message}` } } });
    }
  }

  /** Counts the call as open until its response is finished or its connection closes. */
  #countOpen(res: ServerResponse): void {
    this.#inFlight += 1;
    this.stats.peakInFlight = Math.max(this.stats.peakInFlight, this.#inFlight);
    res.once("close", () => {
      this.#inFlight -= 1;
    });
  }

  #match(method: string, path: string): { route: Route; match: RegExpExecArray } | undefined {
    for (const route of this.#routes) {
      if (route.method !== method) continue;
      const match = route.pattern.exec(path);
      if (match) return { route, match };
    }
    return undefined;
  }

  #serveFile(url: URL, res: ServerResponse): void {
    this.stats.byRoute.download = (this.stats.byRoute.download ?? 0) + 1;
    const bytes = this.#files.get(url.pathname.slice("/files/".length));
    if (!bytes) return send(res, { status: 404, json: { detail: "no such file" } });
    send(res, { status: 200, bytes, contentType: "image/png" });
  }
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        reject(new Error("request body too large"));
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on("end", () => resolve(Buffer.concat(chunks)));
    req.on("error", reject);
  });
}

function parseJson(contentType: string | undefined, raw: Buffer): unknown {
  if (raw.length === 0 || !contentType?.includes("json")) return undefined;
  try {
    return JSON.parse(raw.toString("utf8"));
  } catch {
    return undefined;
  }
}

function send(res: ServerResponse, reply: Exclude<SimReply, { hang: true } | { events: AsyncIterable<string> }>): void {
  if (res.headersSent || res.destroyed) return;
  if ("json" in reply) {
    const text = JSON.stringify(reply.json);
    res.writeHead(reply.status, { "content-type": "application/json", ...(reply.headers ?? {}) });
    res.end(text);
  } else if ("bytes" in reply) {
    res.writeHead(reply.status, { "content-type": reply.contentType, "content-length": reply.bytes.length });
    res.end(reply.bytes);
  } else {
    res.writeHead(reply.status, { "content-type": reply.contentType });
    res.end(reply.text);
  }
}

/** An event stream: the head at once, then each frame as it comes, until the events end or the client leaves. */
async function sendEvents(res: ServerResponse, reply: { status: number; events: AsyncIterable<string> }): Promise<void> {
  res.writeHead(reply.status, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" });
  try {
    for await (const frame of reply.events) {
      if (res.destroyed) return;
      res.write(frame);
    }
  } finally {
    res.end();
  }
}

/** A hung upstream: headers never come; the socket stays open until the client or the simulator gives up. */
function hang(res: ServerResponse, shutdown: AbortSignal): void {
  const end = (): void => void res.destroy();
  if (shutdown.aborted) return end();
  shutdown.addEventListener("abort", end, { once: true });
  res.on("close", () => shutdown.removeEventListener("abort", end));
}

export const malformedReply = (): SimReply => ({ status: 200, text: '{"this is": "not the answer you expect"', contentType: "application/json" });
