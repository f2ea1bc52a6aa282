import { withImageWork } from "./image-library.ts";
import { DEFAULT_OUTPUT_COMPRESSION, type OutputFormat } from "@orvado/core/image-request";
import type { OutputSpec } from "./validate.ts";

// The image a client asked for (output_format, output_compression), whatever the
// upstream returned: every provider's answer is first fitted to the requested size
// as a PNG (providers/fit.ts), then encoded here. EXIF is kept, so the sandbox's
// mark of its own output survives the conversion.

export const CONTENT_TYPES: ReadonlyMap<OutputFormat, string> = new Map([
  ["png", "image/png"],
  ["jpeg", "image/jpeg"],
  ["webp", "image/webp"],
]);

/** The file extension of an image link for a stored content type ("png" for anything unknown). */
export function extensionFor(contentType: string): string {
  for (const [format, type] of CONTENT_TYPES) if (type === contentType) return format;
  return "png";
}

export interface EncodedImage {
  bytes: Buffer;
  contentType: string;
}

export async function encodeImage(png: Buffer, output: OutputSpec): Promise<EncodedImage> {
  const contentType = CONTENT_TYPES.get(output.format)!;
  if (output.format === "png") return { bytes: png, contentType };
  const quality = output.compression ?? DEFAULT_OUTPUT_COMPRESSION;
  const bytes = await withImageWork((sharp) => {
    const image = sharp(png).keepExif();
    // JPEG has no alpha: transparent pixels become white rather than black.
    return output.format === "jpeg" ? image.flatten({ background: "#ffffff" }).jpeg({ quality }).toBuffer() : image.webp({ quality }).toBuffer();
  });
  return { bytes, contentType };
}
