import { createGoogleGenerativeAI } from "@ai-sdk/google";
import type { ProviderFactory } from "../types.ts";
import { geminiSize } from "./size.ts";

// Google: Gemini image models (generateContent, one image per call, aspect ratio plus
// 1K/2K/4K). Imagen is gone: Google shut its API down (the catalog refuses such a channel).
export const googleFactory: ProviderFactory = ({ channel, apiKey, fetch, request }) => {
  const { aspectRatio, imageSize } = geminiSize(request);
  return {
    // Gemini refuses n > 1 per call, whatever the channel says.
    model: createGoogleGenerativeAI({ apiKey, baseURL: channel.baseUrl, fetch }).image(channel.upstreamModel!, { maxImagesPerCall: 1 }),
    maxImagesPerCall: 1,
    aspectRatio,
    providerOptions: { google: { imageConfig: { aspectRatio, imageSize } } },
  };
};
