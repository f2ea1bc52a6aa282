import sharp from "sharp";

// Real PNGs from sharp. A benchmark asks for thousands of images of a few sizes,
// so encoded files are cached by size and colour rather than re-encoded each time.

const PALETTE = [
  { r: 214, g: 69, b: 65 },
  { r: 66, g: 133, b: 244 },
  { r: 52, g: 168, b: 83 },
  { r: 251, g: 188, b: 5 },
  { r: 142, g: 68, b: 173 },
  { r: 22, g: 160, b: 133 },
  { r: 230, g: 126, b: 34 },
  { r: 44, g: 62, b: 80 },
];
const CACHE_LIMIT = 64;
const cache = new Map<string, Promise<Buffer>>();

/** A deterministic colour for a prompt, so distinct prompts give visibly distinct images. */
export function colourIndexFor(text: string): number {
  let hash = 2166136261;
  for (const char of text) hash = Math.imul(hash ^ char.charCodeAt(0), 16777619);
  return (hash >>> 0) % PALETTE.length;
}

export function renderPng(width: number, height: number, seed: string): Promise<Buffer> {
  const colour = colourIndexFor(seed);
  const key = `${width}x${height}/${colour}`;
  const hit = cache.get(key);
  if (hit) return hit;
  const rendered = sharp({ create: { width, height, channels: 3, background: PALETTE[colour]! } })
    .png({ compressionLevel: 1 })
    .toBuffer();
  cache.set(key, rendered);
  rendered.catch(() => cache.delete(key));
  if (cache.size > CACHE_LIMIT) cache.delete(cache.keys().next().value!);
  return rendered;
}

/** Pixel size for an aspect ratio ("16:9") at a resolution class ("1K" has about 1024² pixels). */
export function sizeForAspect(aspectRatio: string | undefined, resolution: string | undefined = "1K"): { width: number; height: number } {
  const [a, b] = (aspectRatio ?? "1:1").split(":").map(Number);
  const ratio = a && b ? a / b : 1;
  const side = resolution === "4K" ? 4096 : resolution === "2K" ? 2048 : resolution === "512" ? 512 : 1024;
  const pixels = side * side;
  const width = roundTo(Math.sqrt(pixels * ratio), 8);
  const height = roundTo(width / ratio, 8);
  return { width: Math.min(width, 4096), height: Math.min(height, 4096) };
}

const roundTo = (value: number, step: number) => Math.max(step, Math.round(value / step) * step);

/** "1536x1024" → {width, height}; anything else → undefined. */
export function parsePixelSize(text: unknown): { width: number; height: number } | undefined {
  if (typeof text !== "string") return undefined;
  const match = /^(\d{2,5})[x*](\d{2,5})$/i.exec(text.trim());
  if (!match) return undefined;
  return { width: Math.min(Number(match[1]), 4096), height: Math.min(Number(match[2]), 4096) };
}
