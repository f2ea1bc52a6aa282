import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import type { ConnectRouter, Interceptor } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import type { Logger } from "@orvado/core";
import { HealthState } from "./health.ts";
import { requireSecret } from "./secret.ts";
import { registerLocalServer } from "./in-process.ts";

export interface RpcServerOptions {
  host: string;
  port: number;
  secret: string;
  /** Fully qualified names of the services routes() registers, for health checks. */
  serviceNames: string[];
  routes: (router: ConnectRouter) => void;
  logger: Logger;
}

export interface RpcServer {
  readonly port: number;
  readonly url: string;
  readonly health: HealthState;
  close(): Promise<void>;
}

function logFailures(logger: Logger): Interceptor {
  return (next) => async (req) => {
    try {
      return await next(req);
    } catch (error) {
      logger.warn({ rpc: req.method.name, err: error }, "rpc failed");
      throw error;
    }
  };
}

/** A Connect server speaking gRPC (and Connect) over cleartext HTTP/2, with grpc.health.v1. */
export async function startRpcServer(options: RpcServerOptions): Promise<RpcServer> {
  const health = new HealthState(options.serviceNames);
  const routes = (router: ConnectRouter) => {
    health.register(router);
    options.routes(router);
  };
  const interceptors = [logFailures(options.logger), requireSecret(options.secret)];
  const handler = connectNodeAdapter({ routes, interceptors, grpcWeb: false });
  const server = http2.createServer(handler);
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
  const unregister = registerLocalServer(options.host, port, { routes, interceptors });
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
