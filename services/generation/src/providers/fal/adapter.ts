import { createFal } from "@ai-sdk/fal";
import type { ProviderFactory } from "../types.ts";
import { falSize } from "./size.ts";

// fal: the synchronous endpoint answers image URLs, downloaded through the guarded fetch.
export const falFactory: ProviderFactory = ({ channel, apiKey, fetch, request }) => ({
  model: createFal({ apiKey, baseURL: channel.baseUrl, fetch }).image(channel.upstreamModel!),
  maxImagesPerCall: 1,
  size: falSize(request),
  providerOptions: { fal: { outputFormat: "png" } },
});
