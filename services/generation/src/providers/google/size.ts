import { closestRatio, ratioValue, resolutionFor, type AspectRatio, type Requested, type Resolution } from "../size-shapes.ts";

/** Gemini image models (generateContent), the only image models Google serves (catalog.ts). */
export const isGeminiModel = (modelId: string) => modelId.startsWith("gemini-");

/** Gemini image models: an aspect ratio from their list, plus the 1K/2K/4K image size. */
export const GEMINI_RATIOS = ["1:1", "2:3", "3:2", "3:4", "4:3", "4:5", "5:4", "9:16", "16:9", "21:9"] as const;
export function geminiSize(requested: Requested): { aspectRatio: AspectRatio; imageSize: Resolution } {
  return { aspectRatio: closestRatio(requested, GEMINI_RATIOS, ratioValue) as AspectRatio, imageSize: resolutionFor(requested) };
}
