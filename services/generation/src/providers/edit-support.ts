import { EDIT_IMAGE_COUNT_CEILING } from "@orvado/core";
import type { ChannelConfig } from "../catalog.ts";
import type { EditSupport } from "./definition.ts";
import { providerDefinition } from "./registry.ts";

// Which channels can run an image edit, as the installed @ai-sdk/* packages (and the
// sandbox) take input images as the model call's files; each provider says what it
// takes in its folder (providers/<name>/index.ts). A channel never silently drops an
// input: an edit with more images than a channel takes skips that channel.

export type { EditSupport };

type ChannelShape = Pick<ChannelConfig, "provider" | "upstreamModel" | "comfyui">;

/** The sandbox edits as OpenAI does: 16 images and a mask. */
const SANDBOX: EditSupport = { images: true, mask: true, maxImages: EDIT_IMAGE_COUNT_CEILING };

export function editSupport(channel: ChannelShape): EditSupport {
  return providerDefinition(channel.provider)?.editSupport(channel.upstreamModel ?? "", channel) ?? SANDBOX;
}

/** Whether the channel can run this edit: its count of images, with or without a mask. */
export function channelCanEdit(channel: ChannelShape, edit: { withMask: boolean; images: number }): boolean {
  const support = editSupport(channel);
  return support.images && (!edit.withMask || support.mask) && edit.images <= support.maxImages;
}
