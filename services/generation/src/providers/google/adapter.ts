import { createGoogleGenerativeAI } from "@ai-sdk/google";
import type { ProviderFactory } from "../types.ts";
import { geminiSize, imagenSize, isGeminiModel } from "./size.ts";

// Google: Gemini image models (generateContent, one image per call, aspect ratio plus
// 1K/2K/4K) and Imagen (:predict, up to four images per call, aspect ratio only).
export const googleFactory: ProviderFactory = ({ channel, apiKey, fetch, request }) => {
  const modelId = channel.upstreamModel!;
  const provider = createGoogleGenerativeAI({ apiKey, baseURL: channel.baseUrl, fetch });
  if (isGeminiModel(modelId)) {
    const { aspectRatio, imageSize } = geminiSize(request);
    return {
      // The Gemini path refuses n > 1 per call, whatever the channel says.
      model: provider.image(modelId, { maxImagesPerCall: 1 }),
      maxImagesPerCall: 1,
      aspectRatio,
      providerOptions: { google: { imageConfig: { aspectRatio, imageSize } } },
    };
  }
  return { model: provider.image(modelId), maxImagesPerCall: Math.min(channel.maxImagesPerCall ?? 4, 4), aspectRatio: imagenSize(request).aspectRatio };
};
