import { EDIT_IMAGE_COUNT_CEILING } from "@orvado/core";
import type { ChannelConfig } from "../catalog.ts";

// Which channels can run an image edit, as the installed @ai-sdk/* packages (and the
// sandbox) take input images through generateImage's prompt. Google's Imagen models take
// none (the package throws and points at Vertex); the Gemini and ByteDance paths refuse a
// mask; fal (without its per-model multi-image option) and Replicate's models other than
// FLUX.2 use the first image only, and FLUX.2 at most 8, so a channel never silently drops
// an input: an edit with more images than a channel takes skips that channel.

export interface EditSupport {
  /** The channel edits images. */
  images: boolean;
  /** The channel takes a mask as well. */
  mask: boolean;
  /** The most input images one call of the channel uses. */
  maxImages: number;
}

type ChannelShape = Pick<ChannelConfig, "provider" | "upstreamModel">;

const NONE: EditSupport = { images: false, mask: false, maxImages: 0 };
const ALL = EDIT_IMAGE_COUNT_CEILING;

export function editSupport(channel: ChannelShape): EditSupport {
  const model = channel.upstreamModel ?? "";
  switch (channel.provider) {
    case "google":
      return model.startsWith("gemini-") ? { images: true, mask: false, maxImages: ALL } : NONE;
    case "bytedance":
      return { images: true, mask: false, maxImages: 10 };
    case "black-forest-labs":
      return { images: true, mask: true, maxImages: 10 };
    case "fal":
      return { images: true, mask: true, maxImages: 1 };
    case "replicate":
      return /flux-2/.test(model) ? { images: true, mask: false, maxImages: 8 } : { images: true, mask: true, maxImages: 1 };
    default:
      // sandbox, openai and openai-compatible (OpenAI's /images/edits takes 16 images and a mask).
      return { images: true, mask: true, maxImages: ALL };
  }
}

/** Whether the channel can run this edit: its count of images, with or without a mask. */
export function channelCanEdit(channel: ChannelShape, edit: { withMask: boolean; images: number }): boolean {
  const support = editSupport(channel);
  return support.images && (!edit.withMask || support.mask) && edit.images <= support.maxImages;
}
