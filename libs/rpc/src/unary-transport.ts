import { create, fromBinary, toBinary, type DescMessage, type DescMethod, type DescMethodUnary, type MessageShape } from "@bufbuild/protobuf";
import {
  appendHeaders,
  Code,
  ConnectError,
  createContextValues,
  type Interceptor,
  type Transport,
  type UnaryRequest,
  type UnaryResponse,
} from "@connectrpc/connect";
import { createConnectTransport, createNodeHttpClient, type Http2SessionManager } from "@connectrpc/connect-node";
import { createMethodUrl, pipeTo, runUnaryCall, sinkAllBytes, type UniversalClientFn, type UniversalClientResponse } from "@connectrpc/connect/protocol";
import { errorFromJsonBytes, headerUnaryContentLength, requestHeaderWithCompression, trailerDemux, validateResponseWithCompression } from "@connectrpc/connect/protocol-connect";
import { CONNECT_READ_MAX_BYTES } from "./http2-settings.ts";

// The Connect protocol (binary protobuf over HTTP/2, no compression) between the
// services, with unary calls made from Connect's own protocol pieces rather than
// through createConnectTransport's unary(). Why: that one builds a serializer
// lookup for every call (16 closures, 2 TextEncoders and 2 TextDecoders, for the
// JSON format we never use) and keeps it, the request body and a second copy of
// the request for as long as the call is open. The edge holds one CreateImage call
// open for a job's whole duration (10-70 s); with 2,000 held that was about 3 KB
// of its 22.6 KB of heap per request (docs/performance.md#where-the-memory-goes).
// Here a call keeps only what Connect's run of the call (interceptors, deadline,
// abort signal) and the HTTP/2 stream need; and a call that nothing can end from
// outside (no caller signal, no deadline: the edge's CreateImage) skips the two
// AbortControllers and linked listeners Connect's runUnaryCall makes for every
// call (about 1.5 KB more per held call). Streaming calls go through
// createConnectTransport unchanged, on the same HTTP/2 session.

export interface UnaryTransportOptions {
  baseUrl: string;
  interceptors: Interceptor[];
  sessionManager: Http2SessionManager;
}

export function connectTransport(options: UnaryTransportOptions): Transport {
  const streaming = createConnectTransport({
    baseUrl: options.baseUrl,
    httpVersion: "2",
    useBinaryFormat: true,
    interceptors: options.interceptors,
    acceptCompression: [],
    sessionManager: options.sessionManager,
  });
  const httpClient = createNodeHttpClient({ httpVersion: "2", sessionProvider: () => options.sessionManager });
  const urls = new MethodUrls(options.baseUrl);
  return {
    unary<I extends DescMessage, O extends DescMessage>(
      method: DescMethodUnary<I, O>,
      signal: AbortSignal | undefined,
      timeoutMs: number | undefined,
      header: ConstructorParameters<typeof Headers>[0] | undefined,
      message: Parameters<Transport["unary"]>[4],
      contextValues: Parameters<Transport["unary"]>[5],
    ): Promise<UnaryResponse<I, O>> {
      // As Connect's transports: a timeout of 0 or less means none.
      const timeout = timeoutMs === undefined || timeoutMs <= 0 ? undefined : timeoutMs;
      const req = {
        stream: false as const,
        service: method.parent,
        method,
        requestMethod: "POST",
        url: urls.of(method),
        header: requestHeaderWithCompression(method.methodKind, true, timeout, header, [], null, true),
        contextValues: contextValues ?? createContextValues(),
        message: message as never,
      };
      const next = (sent: UnaryRequest<I, O>) => sendUnary(httpClient, sent);
      if (signal === undefined && timeout === undefined) return runUnwatched(options.interceptors, { ...req, signal: NEVER_ABORTED }, next);
      return runUnaryCall<I, O>({ interceptors: options.interceptors, signal, timeoutMs: timeout, req, next });
    },
    stream: streaming.stream,
  };
}

/** Each method's URL, made once (Connect makes the string again for every call, and the call keeps it). */
export class MethodUrls {
  readonly #urls = new Map<DescMethod, string>();
  constructor(private readonly baseUrl: string) {}

  of(method: DescMethod): string {
    let url = this.#urls.get(method);
    if (url === undefined) {
      url = createMethodUrl(this.baseUrl, method);
      this.#urls.set(method, url);
    }
    return url;
  }
}

/** The signal interceptors see on a call without a caller signal or deadline: nothing aborts it. */
const NEVER_ABORTED = new AbortController().signal;

/**
 * A call as Connect's runUnaryCall runs it (the first interceptor outermost, the
 * message completed with create(), any failure a ConnectError), for a call that
 * nothing can end from outside, so without the abort signals runUnaryCall links
 * for every call. One difference: interceptors see a signal that does not abort
 * when the call ends (ours read none). The HTTP/2 stream is given no signal, and
 * is reset by exchange() when the answer is refused.
 */
function runUnwatched<I extends DescMessage, O extends DescMessage>(
  interceptors: Interceptor[],
  req: UnaryRequest<I, O>,
  next: (req: UnaryRequest<I, O>) => Promise<UnaryResponse<I, O>>,
): Promise<UnaryResponse<I, O>> {
  try {
    const call = interceptors.reduceRight((inner, interceptor) => interceptor(inner as never) as never, next);
    return call({ ...req, message: create(req.method.input, req.message) }).catch((reason: unknown) => Promise.reject(ConnectError.from(reason)));
  } catch (error) {
    return Promise.reject(ConnectError.from(error));
  }
}

/** Takes from the request only what is sent, so the open call does not keep the request message. */
function sendUnary<I extends DescMessage, O extends DescMessage>(httpClient: UniversalClientFn, req: UnaryRequest<I, O>): Promise<UnaryResponse<I, O>> {
  const body = encode(req.method.input, req.message);
  const signal = req.signal === NEVER_ABORTED ? undefined : req.signal;
  return exchange(httpClient, req.method, { url: req.url, method: "POST", header: req.header, signal, body: sentOnce(body) });
}

function exchange<I extends DescMessage, O extends DescMessage>(
  httpClient: UniversalClientFn,
  method: DescMethodUnary<I, O>,
  request: Parameters<UniversalClientFn>[0],
): Promise<UnaryResponse<I, O>> {
  // A chain rather than an async function: no suspended frame while the answer is awaited.
  return httpClient(request).then((response) =>
    readAnswer(method, response).catch((error: unknown) => {
      if (!request.signal) abandon(response.body, error);
      throw error;
    }),
  );
}

async function readAnswer<I extends DescMessage, O extends DescMessage>(method: DescMethodUnary<I, O>, response: UniversalClientResponse): Promise<UnaryResponse<I, O>> {
  const { isUnaryError, unaryError } = validateResponseWithCompression(method.methodKind, [], true, response.status, response.header);
  const [header, trailer] = trailerDemux(response.header);
  const bytes = await pipeTo(response.body, sinkAllBytes(CONNECT_READ_MAX_BYTES, response.header.get(headerUnaryContentLength)), { propagateDownStreamError: false });
  if (isUnaryError) throw errorFromJsonBytes(bytes, appendHeaders(header, trailer), unaryError!);
  return { stream: false, service: method.parent, method, header, message: decode(method.output, bytes), trailer };
}

/**
 * Resets a refused answer's stream (a wrong content type, an answer too large): with
 * a signal, Connect's run of the call aborts it; without one, the body's iterator is
 * told, which ends the HTTP client's hold on the stream. A no-op once the body was read.
 */
function abandon(body: AsyncIterable<Uint8Array>, error: unknown) {
  try {
    void body[Symbol.asyncIterator]().throw?.(error)?.catch(() => {});
  } catch {
    // The Node client's iterator throws the error back at once: it has reset the stream.
  }
}

function encode<D extends DescMessage>(desc: D, message: MessageShape<D>): Uint8Array<ArrayBuffer> {
  try {
    return toBinary(desc, message) as Uint8Array<ArrayBuffer>;
  } catch (error) {
    throw new ConnectError(`serialize binary: ${error instanceof Error ? error.message : String(error)}`, Code.Internal);
  }
}

function decode<D extends DescMessage>(desc: D, bytes: Uint8Array): MessageShape<D> {
  try {
    return fromBinary(desc, bytes);
  } catch (error) {
    throw new ConnectError(`parse binary: ${error instanceof Error ? error.message : String(error)}`, Code.Internal);
  }
}

/**
 * The request body as the HTTP client reads it: one chunk, then the end. It lets
 * go of the bytes once they are read, where an array's iterator would keep them
 * for the whole call; one object, no closures, as the call holds it while open.
 */
class SentOnce implements AsyncIterable<Uint8Array<ArrayBuffer>>, AsyncIterator<Uint8Array<ArrayBuffer>> {
  #unread: Uint8Array<ArrayBuffer> | undefined;
  constructor(bytes: Uint8Array<ArrayBuffer>) {
    this.#unread = bytes;
  }

  [Symbol.asyncIterator]() {
    return this;
  }

  async next(): Promise<IteratorResult<Uint8Array<ArrayBuffer>>> {
    const value = this.#unread;
    this.#unread = undefined;
    return value === undefined ? { done: true, value: undefined } : { done: false, value };
  }
}

export const sentOnce = (bytes: Uint8Array<ArrayBuffer>): AsyncIterable<Uint8Array<ArrayBuffer>> => new SentOnce(bytes);
