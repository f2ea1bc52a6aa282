import { AsyncLocalStorage } from "node:async_hooks";
import http2 from "node:http2";
import type { DescMessage, DescMethodStreaming, DescMethodUnary, MessageInitShape } from "@bufbuild/protobuf";
import type { ContextValues, StreamResponse, Transport, UnaryResponse } from "@connectrpc/connect";
import { Http2SessionManager } from "@connectrpc/connect-node";

// Several replicas of one service behind one client (ORVADO_*_URL="http://a:7103,http://b:7103").
// Calls go round robin, and a call moves on to the next replica only when it is
// certain the call started nothing where it failed: no HTTP/2 stream was opened
// (connection refused, or reset while connecting), or the server answered the
// stream with REFUSED_STREAM (RFC 9113 §8.7: "no processing has occurred").
// Anything that fails after the request was sent is the caller's to handle, as
// with one replica (a job's call becomes 502 job_outcome_unknown at the edge).

type HeaderInit = ConstructorParameters<typeof Headers>[0];

/** What one call learned on one replica. */
interface Attempt {
  /** True when the request certainly never reached the replica's handler. */
  unsent: boolean;
}

// The session manager's request() runs inside the call's async context, so the
// call learns from it whether a stream was opened without any shared state.
const currentAttempt = new AsyncLocalStorage<Attempt>();

/**
 * Connect's HTTP/2 session manager, telling the current call when its request
 * was never sent: request() rejects only before a stream exists.
 */
export class AttemptAwareSessionManager extends Http2SessionManager {
  override async request(...args: Parameters<Http2SessionManager["request"]>): Promise<http2.ClientHttp2Stream> {
    const attempt = currentAttempt.getStore();
    let stream: http2.ClientHttp2Stream;
    try {
      stream = await super.request(...args);
    } catch (error) {
      if (attempt) attempt.unsent = true;
      throw error;
    }
    // Set before the call's own error handling runs: "close" is emitted in the same tick as "error".
    if (attempt) {
      stream.once("close", () => {
        if (stream.rstCode === http2.constants.NGHTTP2_REFUSED_STREAM) attempt.unsent = true;
      });
    }
    return stream;
  }
}

/** A replica that refused a call is tried after the others for this long: no cost paid per call while it is down. */
export const REFUSED_REPLICA_COOLDOWN_MS = 2_000;

interface Replica {
  transport: Transport;
  refusedAt: number;
}

/** A transport over several replicas of one service (see the top of this file); one replica is used as it is. */
export function replicaTransport(transports: readonly Transport[]): Transport {
  if (transports.length === 0) throw new Error("a service needs at least one replica URL");
  if (transports.length === 1) return transports[0]!;
  const replicas: Replica[] = transports.map((transport) => ({ transport, refusedAt: -Infinity }));
  let next = 0;

  /** Every replica once, starting with the next in turn; ones that refused lately go last. */
  const order = (): Replica[] => {
    const start = next;
    next = (next + 1) % replicas.length;
    const turn = replicas.map((_, index) => replicas[(start + index) % replicas.length]!);
    const now = Date.now();
    const cooling = (replica: Replica) => now - replica.refusedAt < REFUSED_REPLICA_COOLDOWN_MS;
    return [...turn.filter((replica) => !cooling(replica)), ...turn.filter(cooling)];
  };

  async function firstThatTakesIt<R>(signal: AbortSignal | undefined, timeoutMs: number | undefined, call: (replica: Replica, timeoutMs: number | undefined) => Promise<R>): Promise<R> {
    const started = Date.now();
    const candidates = order();
    for (let index = 0; ; index++) {
      const replica = candidates[index]!;
      const attempt: Attempt = { unsent: false };
      // A retry shares the call's deadline rather than starting a new one.
      const remaining = timeoutMs === undefined ? undefined : Math.max(1, timeoutMs - (Date.now() - started));
      try {
        return await currentAttempt.run(attempt, () => call(replica, remaining));
      } catch (error) {
        const last = index === candidates.length - 1;
        if (!attempt.unsent || last || signal?.aborted) throw error;
        replica.refusedAt = Date.now();
      }
    }
  }

  return {
    unary<I extends DescMessage, O extends DescMessage>(
      method: DescMethodUnary<I, O>,
      signal: AbortSignal | undefined,
      timeoutMs: number | undefined,
      header: HeaderInit,
      input: MessageInitShape<I>,
      contextValues?: ContextValues,
    ): Promise<UnaryResponse<I, O>> {
      return firstThatTakesIt(signal, timeoutMs, (replica, remaining) => replica.transport.unary(method, signal, remaining, header, input, contextValues));
    },
    async stream<I extends DescMessage, O extends DescMessage>(
      method: DescMethodStreaming<I, O>,
      signal: AbortSignal | undefined,
      timeoutMs: number | undefined,
      header: HeaderInit,
      input: AsyncIterable<MessageInitShape<I>>,
      contextValues?: ContextValues,
    ): Promise<StreamResponse<I, O>> {
      // A client's stream of messages can be read once; only server streaming (one request message) can be sent again.
      if (method.methodKind !== "server_streaming") {
        const replica = order()[0]!;
        return replica.transport.stream(method, signal, timeoutMs, header, input, contextValues);
      }
      const messages: MessageInitShape<I>[] = [];
      for await (const message of input) messages.push(message);
      return firstThatTakesIt(signal, timeoutMs, (replica, remaining) => replica.transport.stream(method, signal, remaining, header, replay(messages), contextValues));
    },
  };
}

async function* replay<T>(messages: readonly T[]): AsyncIterable<T> {
  yield* messages;
}
