import type { UpstreamProvider } from "../catalog.ts";
import { providerDefinition } from "./registry.ts";
import { asObject } from "./refusal-parts.ts";

// How an upstream says "I will not draw this", each provider's rule kept in its folder
// (providers/<name>/refusal.ts). A refusal is final: it is never retried on another
// channel and the client is told not to retry (502 async_image_failed with x-should-retry: false, docs/api.md#retrying).
// Everything else that goes wrong is a failure and may fail over.

/**
 * Whether an answer with this status can be a refusal at all. The OpenAI-style
 * APIs refuse only with a 4xx error, so their successful answers, each carrying
 * megabytes of base64 image, are not parsed a second time to look for one.
 */
export function mayRefuse(provider: UpstreamProvider, status: number): boolean {
  return !providerDefinition(provider)?.refusesWith4xxOnly || (status >= 400 && status < 500);
}

/** A refusal reason when this upstream answer is a content-policy refusal, else undefined. */
export function detectRefusal(provider: UpstreamProvider, status: number, body: unknown): string | undefined {
  if (!mayRefuse(provider, status)) return undefined;
  return providerDefinition(provider)?.refusal(asObject(body));
}
