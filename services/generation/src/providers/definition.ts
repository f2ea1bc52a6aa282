import type { ChannelConfig, UpstreamProvider } from "../catalog.ts";
import type { ProviderFactory } from "./types.ts";

// What the shared code (upstream.ts, guarded-fetch.ts, edit-support.ts) knows of one
// provider, each kept in its own folder (providers/<name>/index.ts) and found through
// the registry (registry.ts) by the catalog's provider name.

export interface EditSupport {
  /** The channel edits images. */
  images: boolean;
  /** The channel takes a mask as well. */
  mask: boolean;
  /** The most input images one call of the channel uses. */
  maxImages: number;
}

export interface ProviderDefinition {
  name: Exclude<UpstreamProvider, "sandbox">;
  /**
   * The AI SDK call for a channel of this provider. Its adapter, and with it the provider's
   * package, is loaded when a job first needs it: a process loads only the packages its
   * catalog's channels use (each is a few MB of heap; docs/performance.md#where-the-memory-goes).
   */
  loadFactory: () => Promise<ProviderFactory>;
  /** Where the provider package sends requests when the channel sets no baseUrl; none when a channel must set one. */
  defaultBaseUrl?: string;
  /**
   * True for the APIs that refuse only with a 4xx error: their successful answers, each
   * carrying megabytes of base64 image, are not parsed a second time to look for a refusal.
   */
  refusesWith4xxOnly: boolean;
  /** A refusal reason when this JSON answer is a content-policy refusal, else undefined. */
  refusal: (body: Record<string, unknown>) => string | undefined;
  /** Which edits a channel of this provider can run with this upstream model. */
  editSupport: (upstreamModel: string, channel?: Pick<ChannelConfig, "comfyui">) => EditSupport;
}
