import type { ProviderFactory } from "../types.ts";
import { Automatic1111ImageModel } from "./model.ts";
import { automatic1111Size } from "./size.ts";

/** Images the GPU draws at once unless the channel says (maxImagesPerCall): a batch of 4 fits a consumer card at 1024². */
const DEFAULT_BATCH = 4;
const DEFAULT_POLL_INTERVAL_MS = 1_000;

// A1111, Forge and SD.Next: the channel's server, its settings and the job's progress listener.
export const automatic1111Factory: ProviderFactory = ({ channel, apiKey, fetch, request, onProgress }) => {
  const model = new Automatic1111ImageModel(
    channel.upstreamModel ?? "automatic1111",
    {
      baseUrl: channel.baseUrl!,
      authorization: authorizationFor(apiKey),
      checkpoint: channel.upstreamModel,
      steps: channel.steps,
      sampler: channel.sampler,
      negativePrompt: channel.negativePrompt,
      maxBatch: channel.maxImagesPerCall ?? DEFAULT_BATCH,
      pollIntervalMs: channel.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS,
      onProgress,
    },
    fetch,
  );
  return { model, maxImagesPerCall: model.maxImagesPerCall, size: automatic1111Size(request) };
};

/**
 * The channel's key: "user:password" is A1111's --api-auth, sent as HTTP basic auth;
 * anything else is a token for a proxy in front of the server, sent as a bearer.
 */
export function authorizationFor(apiKey: string | undefined): string | undefined {
  if (!apiKey) return undefined;
  return apiKey.includes(":") ? `Basic ${Buffer.from(apiKey, "utf8").toString("base64")}` : `Bearer ${apiKey}`;
}
