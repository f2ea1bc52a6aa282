import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import type { ProviderFactory } from "./types.ts";
import { exactSize } from "./size-mapping.ts";

// Any server speaking OpenAI's images API (a self-hosted model, another gateway). It is
// asked for exactly the requested size; quality goes through for alpha models.
const OPTIONS_KEY = "upstream";

export const openAiCompatibleFactory: ProviderFactory = ({ channel, apiKey, fetch, request }) => ({
  model: createOpenAICompatible({ name: OPTIONS_KEY, apiKey, baseURL: channel.baseUrl!, fetch }).imageModel(channel.upstreamModel!),
  maxImagesPerCall: channel.maxImagesPerCall ?? 10,
  size: exactSize(request),
  providerOptions: request.quality ? { [OPTIONS_KEY]: { quality: request.quality } } : undefined,
});
