import { clone, create, toBinary, type DescMessage, type DescMethod, type DescMethodUnary, type MessageInitShape } from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  createContextValues,
  createServiceImplSpec,
  type ConnectRouter,
  type ContextValues,
  type HandlerContext,
  type Interceptor,
  type UnaryRequest,
  type UnaryResponse,
} from "@connectrpc/connect";
import { directCallContext, UNWATCHED_SIGNAL } from "./direct-context.ts";

// Unary calls to a server in this process, handed over as copies of the messages
// instead of as bytes. Connect's router transport encodes each message, runs the
// call through the whole HTTP-shaped handler pipeline (streams, abort signals,
// a DOMException per finished call) and decodes it again, which costs the
// one-process stack much of its throughput (docs/design-choices.md#calls-between-services).
// Here the caller's and the server's interceptors run as before, the handler gets
// a HandlerContext, errors arrive as the network delivers them, deadlines and the
// server's readMaxBytes hold; each side still gets its own deep copy (`clone`),
// so a handler never shares an object with its caller.

/** A unary handler's (request) => answer, or a server-streaming handler's (request) => messages. */
export type DirectImplementation = (request: unknown, context: HandlerContext) => unknown;
type AnyUnaryMethod = DescMethodUnary<DescMessage, DescMessage>;

/** Method kinds handed over directly; a client- or bidi-streaming method (none here) goes over the network. */
const DIRECT_KINDS = new Set(["unary", "server_streaming"]);

/** A server's unary and server-streaming methods, read from the same routes() its network server serves. */
export function directImplementations(routes: (router: ConnectRouter) => void): Map<DescMethod, DirectImplementation> {
  const implementations = new Map<DescMethod, DirectImplementation>();
  const collector = {
    handlers: [],
    service(service, implementation) {
      for (const spec of Object.values(createServiceImplSpec(service, implementation).methods)) {
        if (DIRECT_KINDS.has(spec.kind)) implementations.set(spec.method, spec.impl as DirectImplementation);
      }
      return collector;
    },
    rpc(method, implementation) {
      if (DIRECT_KINDS.has(method.methodKind)) implementations.set(method, implementation as DirectImplementation);
      return collector;
    },
  } as ConnectRouter;
  routes(collector);
  return implementations;
}

/** The first interceptor outermost, each wrapping the ones after it, as Connect applies them. */
export function chain<Req, Res>(interceptors: Interceptor[], innermost: (request: Req) => Promise<Res>): (request: Req) => Promise<Res> {
  return interceptors.reduceRight((next, interceptor) => interceptor(next as never) as unknown as typeof next, innermost);
}

/**
 * What a remote caller would have received for this error: code, message,
 * metadata and details, not the object; a plain error (a handler bug) as
 * Internal without its message, which only the server's log keeps, as Connect's
 * handlers answer it.
 */
export function asReceived(error: unknown): ConnectError {
  if (!(error instanceof ConnectError)) return new ConnectError("internal error", Code.Internal);
  return new ConnectError(error.rawMessage, error.code, error.metadata, error.details as never);
}

/**
 * A request over the server's readMaxBytes is refused before the server's
 * interceptors and handler run, as the network server refuses it while reading
 * the body. Encoded only when the server sets a limit.
 */
export function refuseOversized(method: { input: DescMessage }, message: DescMessage | object, readMaxBytes: number | undefined): void {
  if (readMaxBytes === undefined) return;
  let size: number;
  try {
    size = toBinary(method.input, message as never).byteLength;
  } catch (error) {
    throw new ConnectError(`the request message cannot be encoded: ${(error as Error).message}`, Code.InvalidArgument);
  }
  if (size > readMaxBytes) throw new ConnectError(`message size ${size} is larger than configured readMaxBytes ${readMaxBytes}`, Code.ResourceExhausted);
}

/**
 * The server's copy of the request. A value no wire could carry (a uint32 out of
 * range, an unpaired surrogate) fails here, before the handler runs, as a
 * network server fails to decode it: InvalidArgument, so the caller knows no work began.
 */
export function receivedCopy(method: { input: DescMessage }, message: DescMessage | object) {
  try {
    return clone(method.input, message as never);
  } catch (error) {
    throw new ConnectError(`the request message cannot be decoded: ${(error as Error).message}`, Code.InvalidArgument);
  }
}

export interface DirectCall {
  method: AnyUnaryMethod;
  implementation: DirectImplementation;
  clientInterceptors: Interceptor[];
  serverInterceptors: Interceptor[];
  /** The server's limit on a request message, if it sets one. */
  readMaxBytes: number | undefined;
  signal: AbortSignal | undefined;
  timeoutMs: number | undefined;
  header: ConstructorParameters<typeof Headers>[0] | undefined;
  input: MessageInitShape<DescMessage>;
  contextValues: ContextValues | undefined;
}

export async function callDirect(call: DirectCall): Promise<UnaryResponse<DescMessage, DescMessage>> {
  const { method } = call;
  const service = method.parent;
  const url = `http://in-memory/${service.typeName}/${method.name}`;
  const handle = async (request: UnaryRequest): Promise<UnaryResponse> => {
    const { context, outcome, end } = directCallContext({
      service,
      method,
      url,
      timeoutMs: call.timeoutMs,
      requestSignal: request.signal,
      requestHeader: request.header,
      contextValues: request.contextValues,
    });
    try {
      const output = await outcome(call.implementation(receivedCopy(method, request.message), context));
      const message = clone(method.output, create(method.output, output as MessageInitShape<DescMessage>));
      return { stream: false, service, method, header: context.responseHeader, message, trailer: context.responseTrailer };
    } finally {
      end();
    }
  };
  const server = chain(call.serverInterceptors, handle);
  const client = chain(call.clientInterceptors, async (request: UnaryRequest): Promise<UnaryResponse> => {
    try {
      refuseOversized(method, request.message, call.readMaxBytes);
      // The server sees its own copy of the headers, as if they had crossed the wire.
      return await server({ ...request, header: new Headers(request.header) });
    } catch (error) {
      throw asReceived(error);
    }
  });
  const response = await client({ stream: false, ...requestEnvelope(call, url), message: create(method.input, call.input) });
  return response as UnaryResponse<DescMessage, DescMessage>;
}

/** What a direct call's request carries besides its message, as Connect's clients fill it in. */
export function requestEnvelope<M extends DescMethod>(call: { method: M; signal: AbortSignal | undefined; header: ConstructorParameters<typeof Headers>[0] | undefined; contextValues: ContextValues | undefined }, url: string) {
  return {
    service: call.method.parent,
    method: call.method,
    requestMethod: "POST" as const,
    url,
    signal: call.signal ?? UNWATCHED_SIGNAL,
    header: new Headers(call.header),
    contextValues: call.contextValues ?? createContextValues(),
  };
}
