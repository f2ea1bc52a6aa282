import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import type { ProviderFactory } from "../types.ts";
import { exactSize } from "./size.ts";
import { openAiImageOptions } from "../openai-options.ts";
import { streamedImageModel, wantsPartialImages } from "../openai-stream.ts";

// Any server speaking OpenAI's images API (a self-hosted model, another gateway). It is
// asked for exactly the requested size; quality goes through for alpha models, and
// background and moderation as sent (the package puts its options in the body as they are).
// A job that asks for partial images streams them as OpenAI does (openai-stream.ts).
const OPTIONS_KEY = "upstream";

export const openAiCompatibleFactory: ProviderFactory = (input) => {
  const { channel, apiKey, fetch, request } = input;
  const model = wantsPartialImages(input)
    ? streamedImageModel({
        provider: "openai-compatible",
        modelId: channel.upstreamModel!,
        baseUrl: channel.baseUrl!,
        apiKey,
        fetch,
        partialImages: request.partialImages!,
        optionsKey: OPTIONS_KEY,
        onProgress: input.onProgress,
      })
    : createOpenAICompatible({ name: OPTIONS_KEY, apiKey, baseURL: channel.baseUrl!, fetch }).imageModel(channel.upstreamModel!);
  return {
    model,
    maxImagesPerCall: channel.maxImagesPerCall ?? 10,
    size: exactSize(request),
    providerOptions: openAiImageOptions(OPTIONS_KEY, request),
  };
};
