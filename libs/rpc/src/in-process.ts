import { createRouterTransport, type ConnectRouter, type Interceptor, type Transport } from "@connectrpc/connect";

// Co-located services call each other without a socket. When the embedded stack
// runs auth, billing, generation and the edge in one process, a call goes through
// Connect's router transport: the same Connect protocol, handlers and server
// interceptors (the shared secret, failure logging) as the server's network
// listener, so error codes, deadlines, aborts and request headers behave as they
// do over HTTP/2; only the socket is skipped. Every server keeps listening on its
// port for callers in other processes.

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

function routerTransport(server: LocalServer, clientInterceptors: Interceptor[]): Transport {
  return createRouterTransport(server.routes, {
    router: { interceptors: server.interceptors, grpcWeb: false, ...(server.readMaxBytes !== undefined && { readMaxBytes: server.readMaxBytes }) },
    transport: { interceptors: clientInterceptors },
  });
}

/**
 * A transport that, call by call, goes in-process while a server for baseUrl
 * runs in this process, and over the network otherwise (also once that server
 * has closed, so a stopped service is refused as it would be remotely).
 */
export function colocatedTransport(baseUrl: string, network: Transport, clientInterceptors: Interceptor[]): Transport {
  const url = new URL(baseUrl);
  // One router transport per server instance: a server restarted on the same port gets a new one.
  const inProcess = new WeakMap<LocalServer, Transport>();
  const pick = (): Transport => {
    const server = localServerFor(url);
    if (!server) return network;
    let local = inProcess.get(server);
    if (!local) {
      local = routerTransport(server, clientInterceptors);
      inProcess.set(server, local);
    }
    return local;
  };
  return {
    unary: (method, signal, timeoutMs, header, input, contextValues) => pick().unary(method, signal, timeoutMs, header, input, contextValues),
    stream: (method, signal, timeoutMs, header, input, contextValues) => pick().stream(method, signal, timeoutMs, header, input, contextValues),
  };
}
