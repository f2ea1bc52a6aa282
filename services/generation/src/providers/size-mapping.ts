// What each upstream family accepts for a requested size (tiers as in docs/api.md#sizes-and-tiers, already parsed
// by sizes.ts), keeping the requested aspect ratio as closely as the upstream allows.
// Whatever comes back is then cut to exactly the requested size by fit.ts.

export interface Requested {
  width: number;
  height: number;
}

export type PixelSize = `${number}x${number}`;
export type AspectRatio = `${number}:${number}`;
export type Resolution = "1K" | "2K" | "4K";

const pixelSize = (width: number, height: number): PixelSize => `${width}x${height}`;
const logRatio = (width: number, height: number) => Math.log(width / height);

/** The candidate whose aspect ratio is closest (in log space, so 2:1 and 1:2 are equally far from 1:1). */
function closestRatio<T>(requested: Requested, candidates: readonly T[], ratioOf: (candidate: T) => number): T {
  const target = logRatio(requested.width, requested.height);
  let best = candidates[0] as T;
  for (const candidate of candidates) {
    if (Math.abs(Math.log(ratioOf(candidate)) - target) < Math.abs(Math.log(ratioOf(best)) - target)) best = candidate;
  }
  return best;
}

const ratioValue = (ratio: string) => {
  const [a, b] = ratio.split(":").map(Number);
  return a! / b!;
};

/** The tier (docs/api.md#sizes-and-tiers) as the resolution class most upstreams name: 1K, 2K or 4K by the longest side. */
export function resolutionFor(requested: Requested): Resolution {
  const longest = Math.max(requested.width, requested.height);
  if (longest < 1800) return "1K";
  if (longest < 3000) return "2K";
  return "4K";
}

/** OpenAI GPT Image: a fixed list of sizes; the one closest in shape (larger ones are scaled down after). */
export const OPENAI_SIZES = ["1024x1024", "1536x1024", "1024x1536"] as const;
export function openAiSize(requested: Requested, allowed: readonly string[] = OPENAI_SIZES): PixelSize {
  return closestRatio(requested, allowed, (size) => {
    const [width, height] = size.split("x").map(Number);
    return width! / height!;
  }) as PixelSize;
}

/** Gemini image models: an aspect ratio from their list, plus the 1K/2K/4K image size. */
export const GEMINI_RATIOS = ["1:1", "2:3", "3:2", "3:4", "4:3", "4:5", "5:4", "9:16", "16:9", "21:9"] as const;
export function geminiSize(requested: Requested): { aspectRatio: AspectRatio; imageSize: Resolution } {
  return { aspectRatio: closestRatio(requested, GEMINI_RATIOS, ratioValue) as AspectRatio, imageSize: resolutionFor(requested) };
}

/** Imagen: five aspect ratios at about one megapixel. */
export const IMAGEN_RATIOS = ["1:1", "3:4", "4:3", "9:16", "16:9"] as const;
export function imagenSize(requested: Requested): { aspectRatio: AspectRatio } {
  return { aspectRatio: closestRatio(requested, IMAGEN_RATIOS, ratioValue) as AspectRatio };
}

/** Replicate image models (FLUX and friends) take an aspect ratio from a list. */
export const REPLICATE_RATIOS = ["1:1", "16:9", "21:9", "3:2", "2:3", "4:5", "5:4", "3:4", "4:3", "9:16", "9:21"] as const;
export function replicateSize(requested: Requested): { aspectRatio: AspectRatio } {
  return { aspectRatio: closestRatio(requested, REPLICATE_RATIOS, ratioValue) as AspectRatio };
}

interface PixelBounds {
  /** Each side is rounded to a multiple of this. */
  multiple: number;
  minSide: number;
  maxSide: number;
  /** Total pixels allowed, when the upstream bounds the area rather than the sides. */
  minPixels?: number;
  maxPixels?: number;
}

/** The requested size scaled (keeping its shape) into the upstream's bounds, sides rounded to its multiple. */
export function boundedSize(requested: Requested, bounds: PixelBounds): PixelSize {
  let scale = 1;
  const longest = Math.max(requested.width, requested.height);
  const shortest = Math.min(requested.width, requested.height);
  if (longest * scale > bounds.maxSide) scale = bounds.maxSide / longest;
  if (shortest * scale < bounds.minSide) scale = Math.min(bounds.minSide / shortest, bounds.maxSide / longest);
  const area = requested.width * requested.height * scale * scale;
  if (bounds.maxPixels && area > bounds.maxPixels) scale *= Math.sqrt(bounds.maxPixels / area);
  if (bounds.minPixels && area < bounds.minPixels) scale *= Math.sqrt(bounds.minPixels / area);
  const side = (value: number) => {
    const rounded = Math.round((value * scale) / bounds.multiple) * bounds.multiple;
    return Math.min(Math.max(rounded, bounds.minSide), bounds.maxSide);
  };
  return pixelSize(side(requested.width), side(requested.height));
}

/** ByteDance Seedream 4: any WxH whose area is from 1280×720 to 4096×4096 pixels. */
export const byteDanceSize = (requested: Requested) =>
  boundedSize(requested, { multiple: 8, minSide: 256, maxSide: 4096, minPixels: 1280 * 720, maxPixels: 4096 * 4096 });

/** Black Forest Labs FLUX: width and height multiples of 32, from 256 to 1440 px. */
export const blackForestLabsSize = (requested: Requested) => boundedSize(requested, { multiple: 32, minSide: 256, maxSide: 1440 });

/** fal FLUX endpoints take {width, height}; multiples of 16 up to 2048 px a side keep every model happy. */
export const falSize = (requested: Requested) => boundedSize(requested, { multiple: 16, minSide: 256, maxSide: 2048 });

/** An OpenAI-compatible server is asked for exactly the requested size. */
export const exactSize = (requested: Requested): PixelSize => pixelSize(requested.width, requested.height);
