// The edge owns HTTP: the OpenAI-compatible routes, error bodies, request ids, image file serving (later the console).
// It must not run SQL, know prices or call upstream providers: it asks auth, billing and generation over gRPC.
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
  await app.listen({ host: config.host, port: config.port });
  const address = app.server.address();
  const port = typeof address === "object" && address ? address.port : config.port;
  return { url: `http://${config.host}:${port}`, port, stop: () => app.close() };
}
