import type { ConnectRouter, ContextValues, Interceptor, Transport } from "@connectrpc/connect";
import type { DescMessage, DescMethodServerStreaming, DescMethodUnary } from "@bufbuild/protobuf";
import { callDirect, directImplementations, type DirectImplementation } from "./direct-transport.ts";
import { callDirectServerStream } from "./direct-stream.ts";

// Co-located services call each other without a socket. When the embedded stack
// runs auth, billing, generation and the edge in one process, a unary call hands
// over copies of its messages (direct-transport.ts) and a server-streaming call
// hands over a copy of each message it streams (direct-stream.ts), since encoding
// them for Connect's router transport costs much of the stack's throughput and of
// a download's CPU (docs/design-choices.md#calls-between-services); a method the
// server's routes lack goes over the network (and is refused there). Each call runs
// through the server's interceptors (the shared secret, failure logging), and
// error codes, deadlines, aborts, request headers and readMaxBytes behave as they
// do over HTTP/2. Every server keeps listening on its port for callers in other
// processes.

export interface LocalServer {
  routes: (router: ConnectRouter) => void;
  /** The server's own interceptors, run as they would be for a call off the network. */
  interceptors: Interceptor[];
  /** The server's limit on a request message, if it sets one (else Connect's default). */
  readMaxBytes?: number;
}

const LOOPBACK_CLIENT_HOSTS = new Set(["127.0.0.1", "localhost", "[::1]", "::1"]);
const LOCAL_SERVER_HOSTS = new Set([...LOOPBACK_CLIENT_HOSTS, "0.0.0.0", "::", "[::]"]);

/** Servers started in this process that a loopback caller can reach, by port. */
const servers = new Map<number, LocalServer>();

/** Makes a server reachable in-process until the returned function is called (before it closes). */
export function registerLocalServer(host: string, port: number, server: LocalServer): () => void {
  if (!LOCAL_SERVER_HOSTS.has(host)) return () => {};
  servers.set(port, server);
  return () => {
    if (servers.get(port) === server) servers.delete(port);
  };
}

function localServerFor(baseUrl: URL): LocalServer | undefined {
  if (baseUrl.protocol !== "http:" || !LOOPBACK_CLIENT_HOSTS.has(baseUrl.hostname)) return undefined;
  return servers.get(Number(baseUrl.port || 80));
}

/**
 * A transport that, call by call, goes in-process while a server for baseUrl
 * runs in this process, and over the network otherwise (also once that server
 * has closed, so a stopped service is refused as it would be remotely).
 */
export function colocatedTransport(baseUrl: string, network: Transport, clientInterceptors: Interceptor[]): Transport {
  const url = new URL(baseUrl);
  // One set of local calls per server instance: a server restarted on the same port gets a new one.
  const inProcess = new WeakMap<LocalServer, LocalCalls>();
  const pick = (): LocalCalls | undefined => {
    const server = localServerFor(url);
    if (!server) return undefined;
    let local = inProcess.get(server);
    if (!local) {
      local = { server, implementations: directImplementations(server.routes) };
      inProcess.set(server, local);
    }
    return local;
  };
  return {
    unary: (method, signal, timeoutMs, header, input, contextValues) => {
      const local = pick();
      const implementation = local?.implementations.get(method);
      if (!local || !implementation) return network.unary(method, signal, timeoutMs, header, input, contextValues);
      const call = { implementation, clientInterceptors, server: local.server, signal, timeoutMs, header, input, contextValues };
      return callDirect({ ...directCallOf(call), method: method as unknown as DescMethodUnary<DescMessage, DescMessage> }) as never;
    },
    stream: (method, signal, timeoutMs, header, input, contextValues) => {
      const local = pick();
      const implementation = method.methodKind === "server_streaming" ? local?.implementations.get(method) : undefined;
      if (!local || !implementation) return network.stream(method, signal, timeoutMs, header, input, contextValues);
      const call = { implementation, clientInterceptors, server: local.server, signal, timeoutMs, header, input, contextValues };
      return callDirectServerStream({ ...directCallOf(call), method: method as unknown as DescMethodServerStreaming<DescMessage, DescMessage> }) as never;
    },
  };
}

/** What a direct call of either kind takes from the transport's arguments and the local server. */
function directCallOf(call: {
  implementation: DirectImplementation;
  clientInterceptors: Interceptor[];
  server: LocalServer;
  signal: AbortSignal | undefined;
  timeoutMs: number | undefined;
  header: ConstructorParameters<typeof Headers>[0] | undefined;
  input: unknown;
  contextValues: ContextValues | undefined;
}) {
  const { server, input, ...rest } = call;
  return { ...rest, serverInterceptors: server.interceptors, readMaxBytes: server.readMaxBytes, input: input as never };
}

interface LocalCalls {
  server: LocalServer;
  /** Streaming calls (and any method the server's routes do not implement, answered as on the network). */
  implementations: ReturnType<typeof directImplementations>;
}
