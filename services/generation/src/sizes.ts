import { Tier } from "@orvado/proto";
import { DEFAULT_SIZE, MAX_SIDE_PX, MIN_SIDE_PX } from "@orvado/core/image-request";

// docs/api.md#sizes-and-tiers: the tier is set by the longest side; `auto` is 1K; 1k/2k/4k are squares.

export interface ImageSize {
  width: number;
  height: number;
  /** The size as the client asked for it, normalised ("1536x1024", "auto", "2k"). */
  label: string;
}

// A Map, not an object literal: a client's "constructor" or "__proto__" must not find Object.prototype's members.
const NAMED = new Map<string, ImageSize>([
  ["auto", { width: 1024, height: 1024, label: "auto" }],
  ["1k", { width: 1024, height: 1024, label: "1k" }],
  ["2k", { width: 2048, height: 2048, label: "2k" }],
  ["4k", { width: 4096, height: 4096, label: "4k" }],
]);

const PIXELS = /^(\d{1,5})x(\d{1,5})$/;

export type SizeParse = { ok: true; size: ImageSize } | { ok: false; message: string };

export function parseSize(text: string | undefined): SizeParse {
  const raw = (text ?? DEFAULT_SIZE).trim().toLowerCase();
  const named = NAMED.get(raw);
  if (named) return { ok: true, size: named };
  const match = PIXELS.exec(raw);
  if (!match) {
    return { ok: false, message: `size must be <width>x<height> in pixels (for example 1024x1024), auto, 1k, 2k or 4k; got ${JSON.stringify(text)}` };
  }
  const width = Number(match[1]);
  const height = Number(match[2]);
  if ([width, height].some((side) => side < MIN_SIDE_PX || side > MAX_SIDE_PX)) {
    return { ok: false, message: `each side of size must be from ${MIN_SIDE_PX} to ${MAX_SIDE_PX} px; got ${width}x${height}` };
  }
  return { ok: true, size: { width, height, label: `${width}x${height}` } };
}

export function tierForSize(size: Pick<ImageSize, "width" | "height">): Tier {
  const longest = Math.max(size.width, size.height);
  if (longest < 1800) return Tier.TIER_1K;
  if (longest < 3000) return Tier.TIER_2K;
  return Tier.TIER_4K;
}
