import type { IncomingHttpHeaders } from "node:http";
import { SimulatorCore, type ReceivedRequest, type Route, type SimBehaviour, type SimStats } from "./server.ts";
import { bearer } from "./protocols/common.ts";
import { openAiRoutes } from "./protocols/openai.ts";
import { googleRoutes } from "./protocols/google.ts";
import { byteDanceRoutes } from "./protocols/bytedance.ts";
import { blackForestLabsRoutes } from "./protocols/black-forest-labs.ts";
import { falRoutes } from "./protocols/fal.ts";
import { replicateRoutes } from "./protocols/replicate.ts";
import { automatic1111Routes, basicOrBearer } from "./protocols/automatic1111.ts";
import { acceptSockets, ComfyState, comfyRoutes } from "./protocols/comfyui.ts";

// Local servers on 127.0.0.1 that speak each upstream image provider's API exactly as the
// installed @ai-sdk/* packages call it. Point a channel's baseUrl at `sim.baseUrl`.

export { parsePromptDirectives, type PromptDirectives, type SimMode } from "./directives.ts";
export { renderPng, sizeForAspect } from "./png.ts";
export { DEFAULT_BEHAVIOUR, type ReceivedRequest, type SimBehaviour, type SimStats } from "./server.ts";

export const SIMULATED_PROVIDERS = ["openai", "google", "bytedance", "black-forest-labs", "fal", "replicate", "openai-compatible", "automatic1111", "comfyui"] as const;
export type SimulatedProvider = (typeof SIMULATED_PROVIDERS)[number];

export interface SimulatorOptions {
  port?: number;
  host?: string;
  behaviour?: Partial<SimBehaviour>;
  /** openai-compatible only: answer data[].url instead of b64_json. */
  answerWithUrls?: boolean;
}

export interface Simulator {
  readonly provider: SimulatedProvider;
  /** The baseURL a client (and a channel) uses, for example http://127.0.0.1:40123/v1. */
  readonly baseUrl: string;
  readonly origin: string;
  readonly stats: SimStats;
  readonly behaviour: Readonly<SimBehaviour>;
  /** API calls open now (file downloads aside); `stats.peakInFlight` is the most at once. */
  readonly inFlight: number;
  behave(change: Partial<SimBehaviour>): void;
  /** Back to the default behaviour, counters zeroed. */
  reset(): void;
  /** Requests seen on one route: "generate", "predict", "submit", "poll" or "download"; ComfyUI: "prompt", "history", "view", "upload", "interrupt", "queue" and "ws" (sockets opened). */
  count(route: string): number;
  /** The requests a protocol records, oldest first (automatic1111: "txt2img", "img2img", "progress", "interrupt"). */
  received(route?: string): readonly ReceivedRequest[];
  close(): Promise<void>;
}

interface ProtocolSpec {
  basePath: string;
  readKey(headers: IncomingHttpHeaders): string | undefined;
  routes(core: SimulatorCore, options: SimulatorOptions): Route[];
}

/** ComfyUI: its routes and the websocket its jobs report on, sharing one queue. */
function comfyRoutesAndSockets(core: SimulatorCore): Route[] {
  const state = new ComfyState(core);
  acceptSockets(core, state, (headers) => bearer(headers.authorization as string | undefined));
  return comfyRoutes(core, state);
}

const header = (name: string) => (headers: IncomingHttpHeaders) => bearer(headers[name]);

const PROTOCOLS: Record<SimulatedProvider, ProtocolSpec> = {
  openai: { basePath: "/v1", readKey: header("authorization"), routes: (core) => openAiRoutes(core, { refusalCode: "moderation_blocked" }) },
  "openai-compatible": {
    basePath: "/v1",
    readKey: header("authorization"),
    routes: (core, options) => openAiRoutes(core, { refusalCode: "content_policy_violation", answerWithUrls: () => options.answerWithUrls ?? false }),
  },
  google: { basePath: "/v1beta", readKey: header("x-goog-api-key"), routes: (core) => googleRoutes(core) },
  bytedance: { basePath: "/api/v3", readKey: header("authorization"), routes: (core) => byteDanceRoutes(core) },
  "black-forest-labs": { basePath: "/v1", readKey: header("x-key"), routes: (core) => blackForestLabsRoutes(core) },
  fal: { basePath: "/fal", readKey: header("authorization"), routes: (core) => falRoutes(core) },
  replicate: { basePath: "/v1", readKey: header("authorization"), routes: (core) => replicateRoutes(core) },
  // The server's root: its routes are /sdapi/v1/…; a key is "user:password" (--api-auth) or a proxy's bearer token.
  automatic1111: { basePath: "", readKey: (headers) => basicOrBearer(headers.authorization), routes: (core) => automatic1111Routes(core) },
  comfyui: { basePath: "", readKey: header("authorization"), routes: comfyRoutesAndSockets },
};

export async function startSimulator(provider: SimulatedProvider, options: SimulatorOptions = {}): Promise<Simulator> {
  const spec = PROTOCOLS[provider];
  if (!spec) throw new Error(`unknown provider ${JSON.stringify(provider)}; use one of ${SIMULATED_PROVIDERS.join(", ")}`);
  const core = new SimulatorCore(provider, spec.basePath, spec.readKey);
  core.setRoutes(spec.routes(core, options));
  if (options.behaviour) core.behave(options.behaviour);
  await core.listen(options.port ?? 0, options.host ?? "127.0.0.1");
  return {
    provider,
    get baseUrl() {
      return core.baseUrl;
    },
    get origin() {
      return core.origin;
    },
    get stats() {
      return core.stats;
    },
    get behaviour() {
      return core.behaviour;
    },
    get inFlight() {
      return core.inFlight;
    },
    behave: (change) => core.behave(change),
    reset: () => core.reset(),
    count: (route) => core.count(route),
    received: (route) => core.received(route),
    close: () => core.close(),
  };
}
