import { createOpenAI } from "@ai-sdk/openai";
import type { ProviderFactory } from "../types.ts";
import { openAiSize } from "./size.ts";
import { openAiImageOptions } from "../openai-options.ts";
import { streamedImageModel, wantsPartialImages } from "../openai-stream.ts";
import { openAi } from "./index.ts";

// OpenAI GPT Image (alpha family): a fixed size list; quality is passed through, since
// the alpha models take it into account (docs/api.md#quality), and so are background and moderation.
// A job that asks for partial images streams them from OpenAI (openai-stream.ts).
const OPTIONS_KEY = "openai";

export const openAiFactory: ProviderFactory = (input) => {
  const { channel, apiKey, fetch, request } = input;
  const model = wantsPartialImages(input)
    ? streamedImageModel({
        provider: "openai",
        modelId: channel.upstreamModel!,
        baseUrl: channel.baseUrl ?? openAi.defaultBaseUrl!,
        apiKey,
        fetch,
        partialImages: request.partialImages!,
        optionsKey: OPTIONS_KEY,
        onProgress: input.onProgress,
      })
    : createOpenAI({ apiKey, baseURL: channel.baseUrl, fetch }).image(channel.upstreamModel!);
  return {
    model,
    maxImagesPerCall: channel.maxImagesPerCall ?? 10,
    size: openAiSize(request),
    providerOptions: openAiImageOptions(OPTIONS_KEY, request),
  };
};
