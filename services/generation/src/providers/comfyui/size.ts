import type { Requested } from "../size-shapes.ts";

// ComfyUI draws in latents of 1/8 the pixels, so an image's sides are multiples of 8
// (EmptyLatentImage's step). The requested size goes as it is when it already is one;
// otherwise each side is rounded up to the next multiple and the gateway's final
// resize (fit.ts) crops back to the exact size.

const STEP = 8;
const MIN_SIDE = 16;

export function comfyuiSize({ width, height }: Requested): { width: number; height: number } {
  const side = (pixels: number) => Math.max(MIN_SIDE, Math.ceil(pixels / STEP) * STEP);
  return { width: side(width), height: side(height) };
}
