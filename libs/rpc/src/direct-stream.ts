import { clone, create, type DescMessage, type Message, type DescMethodServerStreaming, type MessageInitShape } from "@bufbuild/protobuf";
import { type ContextValues, type Interceptor, type StreamRequest, type StreamResponse } from "@connectrpc/connect";
import { directCallContext, } from "./direct-context.ts";
import { asReceived, chain, receivedCopy, refuseOversized, requestEnvelope, type DirectImplementation } from "./direct-transport.ts";

// Server-streaming calls to a server in this process (generation's ReadImage and
// StreamImage), handed over as copies of the messages as unary calls are
// (direct-transport.ts), not encoded and framed as Connect's router transport
// does for every message: a download of a photo-sized image is many large
// messages (docs/design-choices.md#calls-between-services). What the network
// guarantees still holds: both sides' interceptors run, the handler gets a
// HandlerContext whose signal ends with the call, errors arrive as received,
// the caller's abort and deadline end the stream, and each side has its own copy.

type AnyServerStreamingMethod = DescMethodServerStreaming<DescMessage, DescMessage>;

export interface DirectStreamCall {
  method: AnyServerStreamingMethod;
  implementation: DirectImplementation;
  clientInterceptors: Interceptor[];
  serverInterceptors: Interceptor[];
  /** The server's limit on a request message, if it sets one. */
  readMaxBytes: number | undefined;
  signal: AbortSignal | undefined;
  timeoutMs: number | undefined;
  header: ConstructorParameters<typeof Headers>[0] | undefined;
  input: AsyncIterable<MessageInitShape<DescMessage>>;
  contextValues: ContextValues | undefined;
}

/** The one request message of a server-streaming call. */
async function onlyMessage<T>(messages: AsyncIterable<T>): Promise<T> {
  for await (const message of messages) return message;
  throw new Error("a server-streaming call needs a request message");
}

async function* once<T>(message: T): AsyncGenerator<T> {
  yield message;
}

/** Errors thrown while the caller reads the stream, as the network would deliver them. */
async function* asReceivedWhileRead<T>(messages: AsyncIterable<T>): AsyncGenerator<T> {
  try {
    yield* messages;
  } catch (error) {
    throw asReceived(error);
  }
}

export async function callDirectServerStream(call: DirectStreamCall): Promise<StreamResponse<DescMessage, DescMessage>> {
  const { method } = call;
  const service = method.parent;
  const url = `http://in-memory/${service.typeName}/${method.name}`;
  const handle = async (request: StreamRequest): Promise<StreamResponse> => {
    const input = receivedCopy(method, await onlyMessage(request.message));
    const { context, outcome, end, watch } = directCallContext({
      service,
      method,
      url,
      timeoutMs: call.timeoutMs,
      requestSignal: request.signal,
      requestHeader: request.header,
      contextValues: request.contextValues,
    });
    const produced = call.implementation(input, context) as AsyncIterable<MessageInitShape<DescMessage>>;
    async function* copies(): AsyncGenerator<Message> {
      const iterator = produced[Symbol.asyncIterator]();
      let finished = false;
      // Between messages too: a caller that aborts, or outlives its deadline, without asking for another ends the handler's signal.
      const unwatch = watch();
      try {
        for (;;) {
          // Each step races the caller's abort and the deadline, as the network's stream does.
          const step = await outcome(iterator.next());
          if (step.done) {
            finished = true;
            return;
          }
          yield clone(method.output, create(method.output, step.value));
        }
      } finally {
        unwatch();
        end();
        // A caller that stopped reading: the handler's own cleanup (an open file) runs once it yields again.
        if (!finished) Promise.resolve(iterator.return?.()).catch(() => {});
      }
    }
    return { stream: true, service, method, header: context.responseHeader, message: copies(), trailer: context.responseTrailer };
  };
  const server = chain(call.serverInterceptors, handle);
  const client = chain(call.clientInterceptors, async (request: StreamRequest) => {
    try {
      // Refused before the server's interceptors and handler run, as the network server refuses it while reading.
      const message = await onlyMessage(request.message);
      refuseOversized(method, message, call.readMaxBytes);
      // The server sees its own copy of the headers, as if they had crossed the wire.
      const response = await server({ ...request, header: new Headers(request.header), message: once(message) });
      return { ...response, message: asReceivedWhileRead(response.message) };
    } catch (error) {
      throw asReceived(error);
    }
  });
  const response = await client({
    stream: true,
    ...requestEnvelope(call, url),
    message: (async function* () {
      for await (const message of call.input) yield create(method.input, message);
    })(),
  });
  return response as StreamResponse<DescMessage, DescMessage>;
}
