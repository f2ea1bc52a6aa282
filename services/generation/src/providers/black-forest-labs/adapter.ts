import { createBlackForestLabs } from "@ai-sdk/black-forest-labs";
import type { ProviderFactory } from "../types.ts";
import { blackForestLabsSize } from "./size.ts";

// Black Forest Labs FLUX: submit, poll the polling URL, download the result; one image per
// call. The SDK's own poll limit is raised to the job's limit, which is what ends a job.
export const blackForestLabsFactory: ProviderFactory = ({ channel, apiKey, fetch, request, jobTimeoutMs }) => {
  // Width and height go as provider options: the SDK's `size` would only become an aspect ratio.
  const [width, height] = blackForestLabsSize(request).split("x").map(Number);
  return {
    model: createBlackForestLabs({
      apiKey,
      baseURL: channel.baseUrl,
      fetch,
      pollIntervalMillis: channel.pollIntervalMs ?? 500,
      pollTimeoutMillis: jobTimeoutMs,
    }).image(channel.upstreamModel!),
    maxImagesPerCall: 1,
    providerOptions: { blackForestLabs: { outputFormat: "png", width: width!, height: height! } },
  };
};
