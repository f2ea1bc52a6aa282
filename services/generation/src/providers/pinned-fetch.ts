import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from "node:dns";
import { request as httpRequest, type ClientRequest, type IncomingMessage } from "node:http";
import { request as httpsRequest } from "node:https";
import { isIP } from "node:net";
import { BlockedUrlError, isInternalAddress } from "./private-address.ts";
import type { HeldBackReader } from "../answer-gate.ts";
import type { Socket } from "node:net";
import { isStreamedAnswer, limitedStream } from "./streamed-answer.ts";

// fetch for URLs an upstream hands us (result images, polling URLs), checked where
// it matters: the address the connection is actually made to. Checking the name
// first and letting fetch resolve it again would let a DNS answer that changes in
// between (DNS rebinding) reach an internal address.

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/** dns.lookup that fails for any internal address, used as the connection's own lookup. */
export function publicOnlyLookup(hostname: string, options: LookupOptions, callback: LookupCallback): void {
  dnsLookup(hostname, { ...options, all: true, verbatim: true }, (error, addresses) => {
    if (error) return callback(error, []);
    const internal = addresses.find((entry) => isInternalAddress(entry.address));
    if (addresses.length === 0 || internal) {
      return callback(new BlockedUrlError(`refused to connect to ${hostname}: it resolves to the internal address ${internal?.address ?? "(none)"}`), []);
    }
    if (options.all) return callback(null, addresses);
    callback(null, addresses[0]!.address, addresses[0]!.family);
  });
}

export interface PinnedInit {
  method: string;
  /** A plain record (what guarded-fetch.ts sends, and node:http takes as it is) or Headers. */
  headers: Headers | Record<string, string>;
  body?: RequestInit["body"];
  signal?: AbortSignal | null;
  /** An answer longer than this is refused with AnswerTooLarge (declared or as it arrives). */
  maxBytes?: number;
  /**
   * Waits for the answer's place before its body is read (its declared length), or, when
   * no length is declared, once it is read and before it is handed on (answer-gate.ts).
   */
  admit?: (bytes: number, signal: AbortSignal | null | undefined) => Promise<void>;
  /** Registers the connection while its answer has not begun (answer-gate.ts holdBack). */
  holdBack?: (reader: HeldBackReader) => () => void;
}

/**
 * An upstream's answer read whole. Kept out of web streams on purpose: a fetch
 * Response made from a node stream (Readable.toWeb) and then read back cost
 * each call two ReadableStreams and their per-chunk promises; the gateway needs
 * the whole body anyway (its byte limit, the refusal check), and builds the one
 * Response the AI SDK reads from these bytes (guarded-fetch.ts).
 */
export interface Answer {
  status: number;
  statusText: string;
  headers: Headers;
  bytes: Uint8Array;
  /** A successful event stream, handed on as it arrives under the byte limit (streamed-answer.ts); `bytes` is then empty. */
  stream?: ReadableStream<Uint8Array>;
}

export class AnswerTooLarge extends Error {
  constructor(limit: number) {
    super(`the upstream answer exceeded the ${limit}-byte limit`);
    this.name = "AnswerTooLarge";
  }
}

/** A request to a public address only, answered whole (redirects are not followed here). */
export function pinnedFetch(url: URL, init: PinnedInit): Promise<Answer> {
  return fetchWithLookup(url, init, publicOnlyLookup);
}

/** The request itself, with the connection's lookup given (tests give a permissive one to reach a local server). */
export function fetchWithLookup(url: URL, init: PinnedInit, lookup: typeof publicOnlyLookup): Promise<Answer> {
  if (url.protocol !== "http:" && url.protocol !== "https:") return Promise.reject(new BlockedUrlError(`refused to fetch a ${url.protocol} URL from an upstream`));
  const host = url.hostname.replace(/^\[|\]$/g, "");
  if (lookup === publicOnlyLookup && isIP(host) && isInternalAddress(host)) return Promise.reject(new BlockedUrlError(`refused to fetch ${url.origin}: it is the internal address ${host}`));
  if (init.signal?.aborted) return Promise.reject(abortError(init.signal));
  return requestOnce(url, init, lookup, "pooled");
}

const STALE_CONNECTION_CODES = new Set(["ECONNRESET", "EPIPE"]);

/**
 * A kept-alive connection the upstream had closed (its idle timeout) while the
 * request went out on it: the connection was reused, it was reset or broken
 * (ECONNRESET, EPIPE), and no byte of an answer had come. The upstream had
 * already let the connection go, so it did not take the request; sending it
 * again on a new connection is the remedy Node's documentation gives for this
 * race (request.reusedSocket). A soak of 10,000 held requests lost 77 to 1,081 of
 * them to it, as 502s, before (docs/reliability.md#what-is-sent-again-upstream).
 */
function staleConnection(request: ClientRequest, answered: boolean, error: Error): boolean {
  return request.reusedSocket && !answered && STALE_CONNECTION_CODES.has((error as NodeJS.ErrnoException).code ?? "");
}

/**
 * One request, on a pooled connection (kept alive, perhaps reused) or on a new one of its own:
 * a request that found its pooled connection stale (staleConnection) is sent again once, on a
 * new connection, which is never reused and so never sent a third time.
 */
function requestOnce(url: URL, init: PinnedInit, lookup: typeof publicOnlyLookup, connection: "pooled" | "new"): Promise<Answer> {
  const send = url.protocol === "https:" ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const request = send(url, {
      method: init.method,
      headers: init.headers instanceof Headers ? Object.fromEntries(init.headers) : init.headers,
      lookup: lookup as never,
      ...(connection === "new" ? { agent: false } : {}),
    });
    let answered = false;
    request.once("error", (error) => {
      if (!staleConnection(request, answered, error)) return reject(error);
      resolve(init.signal?.aborted ? Promise.reject(abortError(init.signal)) : requestOnce(url, init, lookup, "new"));
    });
    endOnAbort(request, init.signal);
    let release: (() => void) | undefined;
    if (init.holdBack) {
      request.once("finish", () => {
        if (!answered && request.socket && !request.socket.destroyed) release = init.holdBack!(socketReader(request.socket));
      });
      request.once("close", () => release?.());
    }
    request.once("response", (message: IncomingMessage) => {
      answered = true;
      release?.();
      release = undefined;
      readAnswer(message, init).then(resolve, reject);
    });
    if (typeof init.body === "string" || init.body instanceof Uint8Array) request.end(init.body);
    else request.end();
  });
}

/**
 * Pauses and resumes a connection whose answer has not begun. A paused socket reads from the
 * kernel until its buffer holds one read, then stops: the rest of a large answer stays in the
 * kernel and the upstream (TCP flow control), and the HTTP parser sees none of it until resumed.
 * Only a pause of its own is resumed: the HTTP client manages the socket otherwise.
 */
function socketReader(socket: Socket): HeldBackReader {
  let paused = false;
  return {
    stop() {
      if (paused || socket.destroyed) return;
      paused = true;
      socket.pause();
    },
    start() {
      if (!paused) return;
      paused = false;
      if (!socket.destroyed) socket.resume();
    },
  };
}

/**
 * The call's signal ends the request, with the error node:http's own `signal`
 * option gives (AbortError, the signal's reason as its cause). That option watches
 * the request with stream.finished: about ten closures, a context and as many
 * listeners per request, held for the whole wait on the upstream; this is one
 * listener each way (docs/performance.md#where-the-memory-goes).
 */
function endOnAbort(request: ClientRequest, signal: AbortSignal | null | undefined): void {
  if (!signal) return;
  const onAbort = () => request.destroy(abortError(signal));
  signal.addEventListener("abort", onAbort, { once: true });
  request.once("close", () => signal.removeEventListener("abort", onAbort));
}

const abortError = (signal: AbortSignal) => Object.assign(new Error("The operation was aborted", { cause: signal.reason }), { name: "AbortError", code: "ABORT_ERR" });

function readAnswer(message: IncomingMessage, init: PinnedInit): Promise<Answer> {
  const { admit, signal } = init;
  const maxBytes = init.maxBytes ?? Infinity;
  const headers = new Headers();
  for (const [name, value] of Object.entries(message.headers)) {
    if (value === undefined) continue;
    for (const item of Array.isArray(value) ? value : [value]) headers.append(name, item);
  }
  const status = message.statusCode ?? 502;
  const answer = (bytes: Uint8Array): Answer => ({ status, statusText: message.statusMessage ?? "", headers, bytes });
  const declared = declaredLength(message.headers["content-length"]);
  if (declared !== undefined && declared > maxBytes) {
    message.destroy();
    return Promise.reject(new AnswerTooLarge(maxBytes));
  }
  if (isStreamedAnswer(status, headers.get("content-type"))) {
    return Promise.resolve({ ...answer(new Uint8Array()), stream: limitedStream(message, { maxBytes, admit, signal }) });
  }
  const read = new Promise<Answer>((resolve, reject) => {
    message.once("error", reject);
    // A connection cut mid-answer ends it short: not an answer (an AbortError when the call's signal ended it).
    message.once("aborted", () => reject(signal?.aborted ? abortError(signal) : new Error("the upstream closed the connection before its answer was complete")));
    const readBody = () => {
      const chunks: Buffer[] = [];
      let length = 0;
      message.on("data", (chunk: Buffer) => {
        length += chunk.length;
        if (length > maxBytes) message.destroy(new AnswerTooLarge(maxBytes));
        else chunks.push(chunk);
      });
      message.once("end", () => resolve(answer(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, length))));
    };
    // Unread until admitted: node:http stops reading the socket once the message's buffer is full.
    if (admit && declared !== undefined) admit(declared, signal).then(readBody, (error: unknown) => (message.destroy(), reject(error)));
    else readBody();
  });
  return admit && declared === undefined ? read.then(async (whole) => (await admit(whole.bytes.length, signal), whole)) : read;
}

/** The Content-Length an answer declared (node:http's header or fetch's), if it is a length at all. */
export function declaredLength(given: string | null | undefined): number | undefined {
  const length = given === undefined || given === null ? NaN : Number(given);
  return Number.isSafeInteger(length) && length >= 0 ? length : undefined;
}
