import { bufferView } from "@orvado/core";
import { withImageWork } from "../image-library.ts";

// Upstreams deliver the nearest size they support; the client asked for an exact one
// (docs/api.md#sizes-and-tiers: the aspect ratio follows the width and height given). The real pixels are
// read, and anything else is resized to cover the requested box and centre-cropped.

export interface FittedImage {
  png: Buffer;
  /** What the upstream actually delivered, for logs and tests. */
  delivered: { width: number; height: number; format: string };
  resized: boolean;
}

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const PNG_END = Buffer.from([0, 0, 0, 0, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82]); // empty IEND chunk

/**
 * Width and height from a whole PNG's header (signature, then IHDR, and the IEND
 * chunk at the end, so a truncated answer is not taken as whole), or null. This
 * is what sharp's metadata() reads too, without a trip through its thread pool.
 */
export function pngSize(png: Buffer): { width: number; height: number } | null {
  if (png.length < 45 || !png.subarray(0, 8).equals(PNG_SIGNATURE)) return null;
  if (png.readUInt32BE(8) !== 13 || png.toString("latin1", 12, 16) !== "IHDR") return null;
  if (!png.subarray(png.length - 12).equals(PNG_END)) return null;
  return { width: png.readUInt32BE(16), height: png.readUInt32BE(20) };
}

export async function fitToSize(bytes: Uint8Array, width: number, height: number): Promise<FittedImage> {
  const input = bufferView(bytes);
  // The common case, a PNG of exactly the size asked for, needs no decoder at all.
  const header = pngSize(input);
  if (header && header.width === width && header.height === height) return { png: input, delivered: { width: header.width, height: header.height, format: "png" }, resized: false };
  return withImageWork(async (sharp) => {
    const meta = await sharp(input).metadata();
    if (!meta.width || !meta.height || !meta.format) throw new Error("the upstream answered something that is not an image");
    const delivered = { width: meta.width, height: meta.height, format: meta.format };
    // Anything else is decoded in full and encoded again, which also refuses a PNG cut short.
    const png = await sharp(input).resize(width, height, { fit: "cover", position: "centre" }).png().toBuffer();
    return { png, delivered, resized: meta.width !== width || meta.height !== height };
  });
}
