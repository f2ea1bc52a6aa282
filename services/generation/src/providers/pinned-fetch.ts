import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from "node:dns";
import { request as httpRequest, type IncomingMessage } from "node:http";
import { request as httpsRequest } from "node:https";
import { isIP } from "node:net";
import { Readable } from "node:stream";
import { BlockedUrlError, isInternalAddress } from "./private-address.ts";

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
  headers: Headers;
  body?: RequestInit["body"];
  signal?: AbortSignal | null;
}

/** A request to a public address only, answered as a fetch Response (redirects are not followed here). */
export function pinnedFetch(url: URL, init: PinnedInit): Promise<Response> {
  return fetchWithLookup(url, init, publicOnlyLookup);
}

/** The request itself, with the connection's lookup given (tests give a permissive one to reach a local server). */
export function fetchWithLookup(url: URL, init: PinnedInit, lookup: typeof publicOnlyLookup): Promise<Response> {
  if (url.protocol !== "http:" && url.protocol !== "https:") return Promise.reject(new BlockedUrlError(`refused to fetch a ${url.protocol} URL from an upstream`));
  const host = url.hostname.replace(/^\[|\]$/g, "");
  if (lookup === publicOnlyLookup && isIP(host) && isInternalAddress(host)) return Promise.reject(new BlockedUrlError(`refused to fetch ${url.origin}: it is the internal address ${host}`));
  const send = url.protocol === "https:" ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const request = send(url, {
      method: init.method,
      headers: Object.fromEntries(init.headers),
      lookup: lookup as never,
      signal: init.signal ?? undefined,
    });
    request.once("error", reject);
    request.once("response", (message: IncomingMessage) => resolve(toResponse(message)));
    if (typeof init.body === "string" || init.body instanceof Uint8Array) request.end(init.body);
    else request.end();
  });
}

function toResponse(message: IncomingMessage): Response {
  const headers = new Headers();
  for (const [name, value] of Object.entries(message.headers)) {
    if (value === undefined) continue;
    for (const item of Array.isArray(value) ? value : [value]) headers.append(name, item);
  }
  const status = message.statusCode ?? 502;
  const empty = status === 204 || status === 304 || status < 200;
  return new Response(empty ? null : (Readable.toWeb(message) as ReadableStream<Uint8Array>), { status, statusText: message.statusMessage ?? "", headers });
}
