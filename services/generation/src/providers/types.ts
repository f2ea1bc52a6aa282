import type { ImageModelV3, ImageModelV4, SharedV4ProviderOptions } from "@ai-sdk/provider";
import type { ChannelConfig } from "../catalog.ts";
import type { AspectRatio, PixelSize } from "./size-shapes.ts";
import type { EditInputs } from "../edit-inputs.ts";

/**
 * The provider package's image model, called directly (upstream.ts imagesFrom): v4 for
 * the packages of ai 7, v3 for @ai-sdk/bytedance, whose newest release is still of ai 6
 * (both take the same call options and give the same images).
 */
export type ImageModel = ImageModelV4 | ImageModelV3;
type ProviderOptions = SharedV4ProviderOptions;

/** One job as an upstream sees it. */
export interface UpstreamRequest {
  prompt: string;
  width: number;
  height: number;
  n: number;
  /** Only alpha models take a quality (docs/api.md#quality); undefined for beta. */
  quality: string | undefined;
  /** An image edit's input images and mask, sent as the model call's files and mask; absent for a generation. */
  edit?: EditInputs;
  /** OpenAI's background and moderation; set only for models whose every provider takes them (validate.ts). */
  background?: string | undefined;
  moderation?: string | undefined;
  /** Partial images the client asked for (`partial_images`, 0–3); providers that stream renders send at most this many. */
  partialImages?: number;
}

/**
 * What a running upstream job reports before its images (docs/api.md#streaming): how far
 * it is, and a preview render where the backend makes one (OpenAI's partial images,
 * ComfyUI's and A1111's previews). Either may be absent.
 */
export interface UpstreamProgress {
  /** 0–1, where the backend counts its steps. */
  fraction?: number;
  /** A preview render as the backend sent it. */
  preview?: { bytes: Uint8Array; mediaType: "image/png" | "image/jpeg" | "image/webp" };
}

/** Everything one provider needs to make the image model call for a channel. */
export interface FactoryInput {
  channel: ChannelConfig;
  apiKey: string | undefined;
  /** The guarded fetch (guarded-fetch.ts): SSRF checks, byte limit, refusal detection. */
  fetch: typeof fetch;
  request: UpstreamRequest;
  /** Polled providers poll at most this long (the job's own limit). */
  jobTimeoutMs: number;
  /** The upstream byte limit (GENERATION_MAX_UPSTREAM_BYTES), for what a provider reads outside the guarded fetch (a websocket's messages). */
  maxUpstreamBytes: number;
  /** Called as the upstream job advances; providers that see no progress never call it. */
  onProgress?: (progress: UpstreamProgress) => void;
}

export interface PreparedCall {
  model: ImageModel;
  /** Images one upstream call can return; n is split into parallel calls of at most this many. */
  maxImagesPerCall: number;
  size?: PixelSize;
  aspectRatio?: AspectRatio;
  providerOptions?: ProviderOptions;
}

export type ProviderFactory = (input: FactoryInput) => PreparedCall;
