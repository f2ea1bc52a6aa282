import { createOpenAI } from "@ai-sdk/openai";
import type { ProviderFactory } from "../types.ts";
import { openAiSize } from "./size.ts";
import { openAiImageOptions } from "../openai-options.ts";

// OpenAI GPT Image (alpha family): a fixed size list; quality is passed through, since
// the alpha models take it into account (docs/api.md#quality), and so are background and moderation.
export const openAiFactory: ProviderFactory = ({ channel, apiKey, fetch, request }) => ({
  model: createOpenAI({ apiKey, baseURL: channel.baseUrl, fetch }).image(channel.upstreamModel!),
  maxImagesPerCall: channel.maxImagesPerCall ?? 10,
  size: openAiSize(request),
  providerOptions: openAiImageOptions("openai", request),
});
