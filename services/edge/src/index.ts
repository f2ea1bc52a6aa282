// The edge owns HTTP: the OpenAI-compatible routes, error bodies, request ids, image file serving, the console,
// and the OpenAPI document of the public API (src/openapi: /openapi.json and its viewer at /docs).
// It must not run SQL, know prices or call upstream providers: it asks auth, billing and generation by RPC.
import type { Logger } from "@orvado/core";
import type { EdgeConfig } from "./config.ts";
import { buildEdgeApp } from "./app.ts";

export type { EdgeConfig } from "./config.ts";
export { loadEdgeConfig } from "./config.ts";

export interface RunningEdge {
  url: string;
  port: number;
  /** Stops taking new requests and waits for those in flight. */
  stop(): Promise<void>;
}

export async function startEdge(config: EdgeConfig, deps: { logger: Logger }): Promise<RunningEdge> {
  const app = buildEdgeApp(config, deps.logger);
  // Node's default accept backlog (511) overflowed when thousands of clients
  // connected at once (the soak saw ECONNRESET); the kernel caps it at somaxconn.
  await app.listen({ host: config.host, port: config.port, backlog: 4096 });
  const address = app.server.address();
  const port = typeof address === "object" && address ? address.port : config.port;
  return { url: `http://${config.host}:${port}`, port, stop: () => closeGracefully(app) };
}

/**
 * Fastify closes the connections that are idle when close() is called; a
 * keep-alive connection whose long request finishes later would hold the close
 * open until its keep-alive timeout. Close those too as they fall idle.
 */
async function closeGracefully(app: ReturnType<typeof buildEdgeApp>): Promise<void> {
  const sweep = setInterval(() => app.server.closeIdleConnections(), 100);
  try {
    await app.close();
  } finally {
    clearInterval(sweep);
  }
}
