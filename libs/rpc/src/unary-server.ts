import type { ServerHttp2Stream, IncomingHttpHeaders } from "node:http2";
import { create, fromBinary, toBinary, type DescMessage, type DescMethodUnary } from "@bufbuild/protobuf";
import { Code, ConnectError, createContextValues, type ConnectRouter, type HandlerContext, type Interceptor, type UnaryRequest, type UnaryResponse } from "@connectrpc/connect";
import { codeToHttpStatus, contentTypeUnaryJson, contentTypeUnaryProto, errorToJsonBytes, parseTimeout, protocolVersion, trailerMux } from "@connectrpc/connect/protocol-connect";
import { readAllBytes } from "@connectrpc/connect/protocol";
import { directCallContext, UNWATCHED_SIGNAL } from "./direct-context.ts";
import { unaryImplementations } from "./direct-transport.ts";

// The Connect protocol's unary calls as Orvado's own clients send them (POST,
// binary protobuf, no compression: unary-transport.ts), answered straight from the
// HTTP/2 stream. Through Connect's Node adapter every call also gets node's
// compatibility request and response (each a stream with its own state), Connect's
// universal request (its headers copied, an AbortController, a generator made for
// the call to read the body) and its handler context (two more AbortControllers,
// linked): a generation job keeps all of them for the whole wait on its upstream.
// Here a call keeps the stream, the request's headers, its message and the light
// context of direct-context.ts (a signal only if the handler reads one). Any other
// request (gRPC, GET, JSON, compression, a method not served here) returns false
// and goes to Connect's adapter (server.ts), which answers it as before.

type AnyUnaryMethod = DescMethodUnary<DescMessage, DescMessage>;
type Implementation = (request: unknown, context: HandlerContext) => unknown;

export interface UnaryStreamOptions {
  routes: (router: ConnectRouter) => void;
  /** The server's interceptors, the first outermost, as Connect runs them. */
  interceptors: Interceptor[];
  /** The largest request message read; larger is ResourceExhausted, as Connect's readMaxBytes. */
  readMaxBytes: number;
}

/** Answers the stream and returns true when it is a Connect unary call it serves; false leaves it untouched. */
export type UnaryStreamHandler = (stream: ServerHttp2Stream, headers: IncomingHttpHeaders) => boolean;

export function unaryStreamHandler(options: UnaryStreamOptions): UnaryStreamHandler {
  const byPath = new Map<string, { method: AnyUnaryMethod; implementation: Implementation }>();
  for (const [method, implementation] of unaryImplementations(options.routes)) {
    byPath.set(`/${method.parent.typeName}/${method.name}`, { method: method as AnyUnaryMethod, implementation });
  }
  return (stream, headers) => {
    const path = headers[":path"];
    const served = path === undefined ? undefined : byPath.get(path);
    if (!served || !isPlainConnectUnary(headers)) return false;
    const timeout = parseTimeout(headerText(headers["connect-timeout-ms"]), Number.MAX_SAFE_INTEGER);
    if (timeout.error) return false;
    readBody(stream, options.readMaxBytes, headerText(headers["content-length"])).then(
      (bytes) => answer(stream, runCall(served.method, served.implementation, options.interceptors, stream, headers, bytes, timeout.timeoutMs)),
      (error: unknown) => answer(stream, Promise.reject(error)),
    );
    return true;
  };
}

/** POST, binary protobuf, the protocol's version, nothing compressed: what unary-transport.ts sends. */
function isPlainConnectUnary(headers: IncomingHttpHeaders): boolean {
  const encoding = headers["content-encoding"];
  return (
    headers[":method"] === "POST" &&
    headers["content-type"] === contentTypeUnaryProto &&
    headers["connect-protocol-version"] === protocolVersion &&
    (encoding === undefined || encoding === "identity")
  );
}

const headerText = (value: string | string[] | undefined): string | null => (value === undefined ? null : Array.isArray(value) ? value.join(", ") : value);

/**
 * The request's bytes, read by Connect's readAllBytes (ResourceExhausted past the
 * limit, declared or read; InvalidArgument when fewer or more bytes come than the
 * content-length promised). The stream is not destroyed when the reading ends, as a
 * readable's iterator would do by default: the answer goes out on it. It keeps an
 * error listener for as long as it lives (an error event without one would end the
 * process); errors while the body is read reach the iterator.
 */
async function readBody(stream: ServerHttp2Stream, limit: number, declaredLength: string | null): Promise<Uint8Array> {
  stream.on("error", ignore);
  try {
    return await readAllBytes(stream.iterator({ destroyOnReturn: false }), limit, declaredLength);
  } catch (error) {
    // What is left of a refused body is read and dropped, so the stream can end once answered.
    stream.resume();
    throw error;
  }
}

const ignore = () => {};

function runCall(
  method: AnyUnaryMethod,
  implementation: Implementation,
  interceptors: Interceptor[],
  stream: ServerHttp2Stream,
  headers: IncomingHttpHeaders,
  bytes: Uint8Array,
  timeoutMs: number | undefined,
): Promise<UnaryResponse> {
  const service = method.parent;
  const url = `http://${headerText(headers[":authority"]) ?? "localhost"}${headers[":path"]}`;
  // Not an async function: its suspended frame would be held for the whole call (a job's wait on its upstream).
  const handle = (request: UnaryRequest): Promise<UnaryResponse> => {
    const call = directCallContext({
      service,
      method,
      url,
      protocolName: "connect",
      timeoutMs,
      requestSignal: UNWATCHED_SIGNAL,
      requestHeader: request.header,
      contextValues: request.contextValues,
    });
    // A caller that resets its stream has gone: the handler's signal, if it made one, says so.
    const gone = () => call.end();
    stream.once("close", gone);
    const ended = () => {
      stream.off("close", gone);
      call.end();
    };
    let result: unknown;
    try {
      result = implementation(request.message, call.context);
    } catch (error) {
      result = Promise.reject(error);
    }
    return call.outcome(result).then(
      (output): UnaryResponse => {
        ended();
        return { stream: false, service, method, header: call.context.responseHeader, message: create(method.output, output as never), trailer: call.context.responseTrailer };
      },
      (error: unknown) => {
        ended();
        throw error;
      },
    );
  };
  try {
    const run = interceptors.reduceRight((next, interceptor) => interceptor(next as never) as typeof next, handle);
    return run({
      stream: false,
      service,
      method,
      requestMethod: "POST",
      url,
      signal: UNWATCHED_SIGNAL,
      header: requestHeaders(headers),
      contextValues: createContextValues(),
      message: decode(method, bytes),
    });
  } catch (error) {
    return Promise.reject(error);
  }
}

/** The request's headers without HTTP/2's pseudo-headers, as Connect's adapter gives them to interceptors. */
function requestHeaders(headers: IncomingHttpHeaders): Headers {
  const header = new Headers();
  for (const name in headers) {
    const value = headers[name];
    if (name.startsWith(":") || value === undefined) continue;
    header.set(name, headerText(value)!);
  }
  return header;
}

/** A message no Connect server could decode is InvalidArgument, before any interceptor or handler runs. */
function decode(method: AnyUnaryMethod, bytes: Uint8Array) {
  try {
    return fromBinary(method.input, bytes);
  } catch (error) {
    throw new ConnectError(`parse binary: ${error instanceof Error ? error.message : String(error)}`, Code.InvalidArgument);
  }
}

/** The answer as Connect's unary handler writes it: 200 and the message, or the code's HTTP status and the error as JSON. */
function answer(stream: ServerHttp2Stream, call: Promise<UnaryResponse>): void {
  call
    .then((response) => respond(stream, 200, contentTypeUnaryProto, trailerMux(response.header, response.trailer), toBinary(response.method.output, response.message)))
    // A failed call, or an answer that cannot be serialized: Internal unless it is a ConnectError.
    .catch((reason: unknown) => {
      const error = reason instanceof ConnectError ? reason : new ConnectError("internal error", Code.Internal, undefined, undefined, reason);
      respond(stream, codeToHttpStatus(error.code), contentTypeUnaryJson, error.metadata, errorToJsonBytes(error, {}));
    })
    .catch(() => stream.destroy());
}

/** Writes the answer unless the caller has gone; a stream that cannot take it is reset. */
function respond(stream: ServerHttp2Stream, status: number, contentType: string, header: Headers, body: Uint8Array): void {
  if (stream.destroyed || stream.closed || stream.headersSent) return;
  const out: Record<string, string | number> = { ":status": status };
  header.forEach((value, name) => (out[name] = value));
  out["content-type"] = contentType;
  out["content-length"] = body.byteLength;
  stream.respond(out);
  stream.end(body);
}
