import type { UpstreamProvider } from "../catalog.ts";
import { lookup as dnsLookup } from "node:dns";
import { AnswerTooLarge, declaredLength, fetchWithLookup, pinnedFetch, publicOnlyLookup, type Answer, type PinnedInit } from "./pinned-fetch.ts";
import { detectRefusal, mayRefuse } from "./refusals.ts";
import { UpstreamFailure, UpstreamRefusal } from "./errors.ts";
import { sameSite } from "./same-site.ts";
import { ReadResponse } from "./read-response.ts";
import { isStreamedAnswer, limitedStream } from "./streamed-answer.ts";

// The fetch every AI SDK provider is given. It is where the gateway's own rules for
// talking to upstreams live, whatever the provider package does:
// - URLs outside the channel's baseUrl (result images, polling URLs) may only connect to
//   public addresses, checked at connection time (no DNS rebinding);
// - credentials are sent only to the channel's own site, never to a CDN elsewhere;
// - every answer is read under a byte limit (a successful event stream is handed on as it
//   arrives, still under the limit: streamed-answer.ts);
// - JSON answers are checked for the provider's way of refusing, which ends the call at once.

export interface GuardOptions {
  provider: UpstreamProvider;
  baseUrl: string;
  allowPrivateNetwork: boolean;
  maxResponseBytes: number;
  /** Receives the refusal, so the caller can classify even if the SDK wraps the error. */
  onRefusal(reason: string): void;
  /** The job's place for its answers (answer-gate.ts AnswerPass.admit); without it answers are read at once. */
  admit?: (bytes: number, signal: AbortSignal | null | undefined) => Promise<void>;
  /** answer-gate.ts AnswerPass.holdBack. */
  holdBack?: PinnedInit["holdBack"];
}

const MAX_REDIRECTS = 3;
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
const CREDENTIAL_HEADERS: ReadonlySet<string> = new Set(["authorization", "x-key", "x-goog-api-key", "api-key", "x-api-key"]);
/** Answers larger than this are not parsed twice to look for a refusal; refusals are small. */
const MAX_SNIFF_BYTES = 8 * 1024 * 1024;

export function guardedFetch(options: GuardOptions): typeof fetch {
  const base = baseUrlOf(options.baseUrl);
  return async (input, init) => {
    let url = new URL(input instanceof Request ? input.url : String(input));
    const method = (init?.method ?? "GET").toUpperCase();
    for (let hop = 0; ; hop += 1) {
      const underBase = url.origin === base.origin && url.pathname.startsWith(base.pathname);
      const headers = headerRecord(init?.headers, !sameSite(url, base));
      const request = { method, headers, body: init?.body, signal: init?.signal, maxBytes: options.maxResponseBytes, admit: options.admit, holdBack: options.holdBack };
      const answer = await fetchAnswer(url, request, init, underBase || options.allowPrivateNetwork);
      const location = answer.headers.get("location");
      if (REDIRECT_STATUSES.has(answer.status) && location && method === "GET" && hop < MAX_REDIRECTS) {
        url = new URL(location, url);
        continue;
      }
      return inspect(answer, options);
    }
  };
}

/**
 * Channels' base URLs, parsed once: a guarded fetch is made per job, and a URL
 * parsed for each was held for the whole wait on the upstream. The keys come
 * from the catalog, never from a request, so the map is as small as the catalog.
 */
const BASE_URLS = new Map<string, URL>();

function baseUrlOf(baseUrl: string): URL {
  let base = BASE_URLS.get(baseUrl);
  if (!base) BASE_URLS.set(baseUrl, (base = new URL(baseUrl.endsWith("/") ? baseUrl : `${baseUrl}/`)));
  return base;
}

/**
 * The request's headers as a plain record with lower-case names (what node:http
 * takes), without credentials when the URL is off the channel's site. A Headers
 * object here cost every held job memory (Headers, its list and Map); the
 * AI SDK packages pass plain records, the other forms are read as Headers reads them.
 */
function headerRecord(given: RequestInit["headers"], dropCredentials: boolean): Record<string, string> {
  const record: Record<string, string> = {};
  const entries: Iterable<readonly [string, string | undefined]> =
    given === undefined || given === null ? [] : given instanceof Headers || Array.isArray(given) ? (given as Iterable<[string, string]>) : Object.entries(given as Record<string, string | undefined>);
  for (const [rawName, value] of entries) {
    const name = rawName.toLowerCase();
    if (value === undefined || (dropCredentials && CREDENTIAL_HEADERS.has(name))) continue;
    record[name] = name in record ? `${record[name]}, ${value}` : String(value);
  }
  return record;
}

/** One hop's answer, read whole under the byte limit; off the channel's own API the address is checked as the connection is made (pinned-fetch.ts). */
function fetchAnswer(url: URL, request: PinnedInit, init: RequestInit | undefined, trusted: boolean): Promise<Answer> {
  // Not an async function: its frame would be held, suspended, for the whole wait on the upstream.
  return (trusted ? trustedFetch(url, request, init) : pinnedFetch(url, request)).catch(tooLargeAsFailure);
}

function tooLargeAsFailure(error: unknown): never {
  if (error instanceof AnswerTooLarge) throw new UpstreamFailure(error.message);
  throw error;
}

/**
 * The channel's own API (or a channel allowed onto private addresses): any
 * address, through node:http like pinned-fetch. A job waits on this call for
 * as long as the upstream takes; node:http holds less heap per call in flight than
 * fetch (undici) and costs less CPU per call
 * (docs/design-choices.md#upstream-calls-through-nodehttp). Bodies node:http cannot send as they are
 * (form data, blobs, streams) still go through fetch.
 */
async function trustedFetch(url: URL, request: PinnedInit, init: RequestInit | undefined): Promise<Answer> {
  const body = request.body;
  if (body === undefined || body === null || typeof body === "string" || body instanceof Uint8Array) {
    return fetchWithLookup(url, request, dnsLookup as typeof publicOnlyLookup);
  }
  const response = await fetch(url, { ...init, headers: request.headers, redirect: "manual" });
  const limit = request.maxBytes ?? Infinity;
  const declared = declaredLength(response.headers.get("content-length"));
  if (declared !== undefined && declared > limit) {
    await response.body?.cancel();
    throw new AnswerTooLarge(limit);
  }
  if (isStreamedAnswer(response.status, response.headers.get("content-type")) && response.body) {
    const stream = limitedStream(response.body as unknown as AsyncIterable<Uint8Array>, { maxBytes: limit, admit: request.admit, signal: request.signal });
    return { status: response.status, statusText: response.statusText, headers: response.headers, bytes: new Uint8Array(), stream };
  }
  // As pinned-fetch.ts does: the body unread until the answer has its place, or, its length unknown, held back once read.
  if (declared !== undefined) await admitOrCancel(request, response, declared);
  const bytes = await readLimited(response, limit);
  if (declared === undefined) await request.admit?.(bytes.length, request.signal);
  return { status: response.status, statusText: response.statusText, headers: response.headers, bytes };
}

async function admitOrCancel(request: PinnedInit, response: Response, bytes: number): Promise<void> {
  try {
    await request.admit?.(bytes, request.signal);
  } catch (error) {
    await response.body?.cancel().catch(() => undefined);
    throw error;
  }
}

/** The one Response the AI SDK reads, once the answer is known not to be a refusal (read-response.ts: no copy of the bytes). */
function inspect(answer: Answer, options: GuardOptions): Response {
  // A successful event stream: no refusal to sniff (those come as error answers or as events the provider's adapter reads).
  if (answer.stream) return new Response(answer.stream, { status: answer.status, statusText: answer.statusText, headers: answer.headers });
  const json = (answer.headers.get("content-type") ?? "").includes("json");
  if (json && answer.bytes.length <= MAX_SNIFF_BYTES && mayRefuse(options.provider, answer.status)) {
    const reason = refusalIn(options.provider, answer.status, answer.bytes);
    if (reason !== undefined) {
      options.onRefusal(reason);
      throw new UpstreamRefusal(reason);
    }
  }
  const response = new ReadResponse(answer.status === 204 || answer.status === 304 ? null : answer.bytes, {
    status: answer.status,
    statusText: answer.statusText,
    headers: answer.headers,
  });
  return response as unknown as Response;
}

function refusalIn(provider: UpstreamProvider, status: number, bytes: Uint8Array): string | undefined {
  try {
    return detectRefusal(provider, status, JSON.parse(new TextDecoder().decode(bytes)));
  } catch {
    return undefined;
  }
}

async function readLimited(response: Response, limit: number): Promise<Uint8Array> {
  if (!response.body) return new Uint8Array();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
    total += chunk.byteLength;
    if (total > limit) throw new AnswerTooLarge(limit);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, total);
}

