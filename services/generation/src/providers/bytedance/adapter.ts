import { createByteDance } from "@ai-sdk/bytedance";
import type { ProviderFactory } from "../types.ts";
import { byteDanceSize } from "./size.ts";

// ByteDance Seedream: one image per call, any WxH within its pixel-area bounds.
export const byteDanceFactory: ProviderFactory = ({ channel, apiKey, fetch, request }) => ({
  model: createByteDance({ apiKey, baseURL: channel.baseUrl, fetch }).image(channel.upstreamModel!),
  maxImagesPerCall: 1,
  size: byteDanceSize(request),
  providerOptions: { bytedance: { watermark: false, outputFormat: "png" } },
});
