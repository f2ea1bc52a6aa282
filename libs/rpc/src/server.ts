import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { Code, ConnectError, type ConnectRouter, type Interceptor } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import type { Logger } from "@orvado/core";
import { HealthState } from "./health.ts";
import { requireSecret } from "./secret.ts";
import { registerLocalServer } from "./in-process.ts";
import { HTTP2_SESSION_MEMORY_MB } from "./http2-settings.ts";

export interface RpcServerOptions {
  host: string;
  port: number;
  secret: string;
  /** Fully qualified names of the services routes() registers, for health checks. */
  serviceNames: string[];
  routes: (router: ConnectRouter) => void;
  logger: Logger;
  /** The largest request message the server reads (Connect's default is 4 GiB); larger is ResourceExhausted. */
  readMaxBytes?: number;
}

export interface RpcServer {
  readonly port: number;
  readonly url: string;
  readonly health: HealthState;
  close(): Promise<void>;
}

/**
 * What a caller asked wrongly (an unknown id, a bad argument): an expected refusal,
 * which the caller answers and logs itself. Logging each with its stack let a public
 * lookup of random ids fill the disk (a stack trace a miss).
 */
const CALLER_ERRORS: ReadonlySet<Code> = new Set([
  Code.InvalidArgument,
  Code.NotFound,
  Code.AlreadyExists,
  Code.PermissionDenied,
  Code.Unauthenticated,
  Code.FailedPrecondition,
  Code.OutOfRange,
]);

const isCallerError = (error: unknown): error is ConnectError => error instanceof ConnectError && CALLER_ERRORS.has(error.code);

/**
 * Not an async function: a suspended frame of its own would be held for the whole
 * of every call (a generation job's wait on its upstream); the failure handler
 * is attached to the call's promise instead. The next interceptor (requireSecret)
 * is async, so its failures, even synchronous ones, arrive as rejections.
 */
function logFailures(logger: Logger): Interceptor {
  return (next) => (req) =>
    next(req).catch((error: unknown) => {
      // One short line, no stack, and only at debug: the caller's own log line records the refusal.
      if (isCallerError(error)) logger.debug({ rpc: req.method.name, code: Code[error.code] }, "rpc refused");
      else logger.warn({ rpc: req.method.name, err: error }, "rpc failed");
      throw error;
    });
}

/**
 * A Connect server speaking gRPC (and Connect) over cleartext HTTP/2, with
 * grpc.health.v1, through Connect's Node adapter; callers in this process reach
 * the same routes and interceptors in-process (in-process.ts).
 */
export async function startRpcServer(options: RpcServerOptions): Promise<RpcServer> {
  const health = new HealthState(options.serviceNames);
  const routes = (router: ConnectRouter) => {
    health.register(router);
    options.routes(router);
  };
  const interceptors = [logFailures(options.logger), requireSecret(options.secret)];
  const readMaxBytes = options.readMaxBytes;
  const handler = connectNodeAdapter({ routes, interceptors, grpcWeb: false, ...(readMaxBytes !== undefined && { readMaxBytes }) });
  const server = http2.createServer({ maxSessionMemory: HTTP2_SESSION_MEMORY_MB }, handler);
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on("session", (session) => {
    sessions.add(session);
    session.on("close", () => sessions.delete(session));
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const unregister = registerLocalServer(options.host, port, { routes, interceptors, ...(readMaxBytes !== undefined && { readMaxBytes }) });
  return {
    port,
    url: `http://${options.host}:${port}`,
    health,
    async close() {
      // In-process callers go to the network from now on, and are refused there like remote ones.
      unregister();
      health.setServing(false);
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // GOAWAY lets calls in flight finish while refusing new streams.
      for (const session of sessions) session.close();
      await closed;
    },
  };
}
