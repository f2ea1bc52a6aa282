import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import type { ProviderFactory } from "../types.ts";
import { exactSize } from "./size.ts";
import { openAiImageOptions } from "../openai-options.ts";

// Any server speaking OpenAI's images API (a self-hosted model, another gateway). It is
// asked for exactly the requested size; quality goes through for alpha models, and
// background and moderation as sent (the package puts its options in the body as they are).
const OPTIONS_KEY = "upstream";

export const openAiCompatibleFactory: ProviderFactory = ({ channel, apiKey, fetch, request }) => ({
  model: createOpenAICompatible({ name: OPTIONS_KEY, apiKey, baseURL: channel.baseUrl!, fetch }).imageModel(channel.upstreamModel!),
  maxImagesPerCall: channel.maxImagesPerCall ?? 10,
  size: exactSize(request),
  providerOptions: openAiImageOptions(OPTIONS_KEY, request),
});
