import { closestRatio, ratioValue, type AspectRatio, type Requested } from "../size-shapes.ts";

/** Replicate image models (FLUX and friends) take an aspect ratio from a list. */
export const REPLICATE_RATIOS = ["1:1", "16:9", "21:9", "3:2", "2:3", "4:5", "5:4", "3:4", "4:3", "9:16", "9:21"] as const;
export function replicateSize(requested: Requested): { aspectRatio: AspectRatio } {
  return { aspectRatio: closestRatio(requested, REPLICATE_RATIOS, ratioValue) as AspectRatio };
}
