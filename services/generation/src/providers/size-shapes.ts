// The shapes every provider's size mapping (providers/<name>/size.ts) is built from: the
// closest aspect ratio from a list, a size scaled into pixel bounds, the 1K/2K/4K class.
// The requested size is a tier (docs/api.md#sizes-and-tiers), already parsed by sizes.ts; whatever an upstream
// returns is then cut to exactly the requested size by fit.ts.

export interface Requested {
  width: number;
  height: number;
}

export type PixelSize = `${number}x${number}`;
export type AspectRatio = `${number}:${number}`;
export type Resolution = "1K" | "2K" | "4K";

export const pixelSize = (width: number, height: number): PixelSize => `${width}x${height}`;
const logRatio = (width: number, height: number) => Math.log(width / height);

/** The candidate whose aspect ratio is closest (in log space, so 2:1 and 1:2 are equally far from 1:1). */
export function closestRatio<T>(requested: Requested, candidates: readonly T[], ratioOf: (candidate: T) => number): T {
  const target = logRatio(requested.width, requested.height);
  let best = candidates[0] as T;
  for (const candidate of candidates) {
    if (Math.abs(Math.log(ratioOf(candidate)) - target) < Math.abs(Math.log(ratioOf(best)) - target)) best = candidate;
  }
  return best;
}

export const ratioValue = (ratio: string) => {
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
