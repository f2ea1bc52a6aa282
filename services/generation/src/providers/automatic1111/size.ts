import { boundedSize, type PixelSize, type Requested } from "../size-shapes.ts";

/**
 * AUTOMATIC1111 (and Forge, SD.Next) takes any width and height, and draws them in
 * multiples of 8 (the latent is an eighth of the image): the requested size is asked for
 * as it is when it is such a multiple, else the nearest one (the answer is then fitted).
 */
export const automatic1111Size = (requested: Requested): PixelSize => boundedSize(requested, { multiple: 8, minSide: 64, maxSide: 4096 });

/** "1536x1024" as numbers. */
export function sizeNumbers(size: string | undefined, fallback: Requested): Requested {
  const match = /^(\d+)x(\d+)$/.exec(size ?? "");
  return match ? { width: Number(match[1]), height: Number(match[2]) } : fallback;
}
