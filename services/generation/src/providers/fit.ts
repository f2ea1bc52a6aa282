import sharp from "sharp";

// Upstreams deliver the nearest size they support; the client asked for an exact one
// (spec 2.3: the aspect ratio follows the width and height given). The real pixels are
// read, and anything else is resized to cover the requested box and centre-cropped.

export interface FittedImage {
  png: Buffer;
  /** What the upstream actually delivered, for logs and tests. */
  delivered: { width: number; height: number; format: string };
  resized: boolean;
}

export async function fitToSize(bytes: Uint8Array, width: number, height: number): Promise<FittedImage> {
  const input = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const meta = await sharp(input).metadata();
  if (!meta.width || !meta.height || !meta.format) throw new Error("the upstream answered something that is not an image");
  const delivered = { width: meta.width, height: meta.height, format: meta.format };
  if (meta.width === width && meta.height === height && meta.format === "png") return { png: input, delivered, resized: false };
  const png = await sharp(input).resize(width, height, { fit: "cover", position: "centre" }).png().toBuffer();
  return { png, delivered, resized: meta.width !== width || meta.height !== height };
}
