import { withImageWork } from "../../image-library.ts";

/**
 * OpenAI's mask marks the area to change with transparent pixels (alpha 0) and keeps
 * the opaque ones (docs/api.md "Image edits"); A1111's inpainting mask is a greyscale
 * image whose white pixels are repainted (inpainting_mask_invert 0). So A1111's mask is
 * the inverted alpha channel: transparent becomes white, opaque black, partial alpha a
 * grey (A1111 blends by it).
 */
export function a1111Mask(openAiMask: Uint8Array): Promise<Buffer> {
  return withImageWork((sharp) => sharp(openAiMask).ensureAlpha().extractChannel("alpha").negate().toColourspace("b-w").png().toBuffer());
}
