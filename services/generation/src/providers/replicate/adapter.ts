import { createReplicate } from "@ai-sdk/replicate";
import type { ProviderFactory } from "../types.ts";
import { replicateSize } from "./size.ts";
import { withReplicatePolling } from "./polling.ts";

// Replicate: "Prefer: wait" first, then polling urls.get (polling.ts) for
// predictions that outlast the wait; the output URLs are downloaded.
export const replicateFactory: ProviderFactory = ({ channel, apiKey, fetch, request }) => ({
  model: createReplicate({ apiToken: apiKey, baseURL: channel.baseUrl, fetch: withReplicatePolling(fetch, channel.pollIntervalMs ?? 1000) }).image(
    channel.upstreamModel!,
  ),
  maxImagesPerCall: 1,
  aspectRatio: replicateSize(request).aspectRatio,
  providerOptions: { replicate: { output_format: "png" } },
});
