import type { UpstreamRequest } from "./types.ts";

/**
 * The OpenAI image fields a request carries, under the provider package's options key:
 * quality, background and moderation, each only when set (an absent field keeps the
 * upstream's own default). Null when there is nothing to pass on.
 */
export function openAiImageOptions(key: string, request: UpstreamRequest) {
  const options = {
    ...(request.quality && { quality: request.quality }),
    ...(request.background && { background: request.background }),
    ...(request.moderation && { moderation: request.moderation }),
  };
  return Object.keys(options).length > 0 ? { [key]: options } : undefined;
}
