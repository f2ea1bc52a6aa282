import { closestRatio, type PixelSize, type Requested } from "../size-shapes.ts";

/** OpenAI GPT Image: a fixed list of sizes; the one closest in shape (larger ones are scaled down after). */
export const OPENAI_SIZES = ["1024x1024", "1536x1024", "1024x1536"] as const;
export function openAiSize(requested: Requested, allowed: readonly string[] = OPENAI_SIZES): PixelSize {
  return closestRatio(requested, allowed, (size) => {
    const [width, height] = size.split("x").map(Number);
    return width! / height!;
  }) as PixelSize;
}
