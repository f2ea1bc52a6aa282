import type { UpstreamProvider } from "../catalog.ts";

// How each upstream says "I will not draw this". A refusal is final: it is never
// retried on another channel and the client is told not to retry (502
// async_image_failed with x-should-retry: false, docs/api.md#retrying). Everything else that goes wrong is a failure and may fail over.

type Json = Record<string, unknown>;
const asObject = (value: unknown): Json => (value !== null && typeof value === "object" ? (value as Json) : {});
const text = (value: unknown) => (typeof value === "string" ? value : "");

const POLICY_WORDS = /moderat|safety|content[ _-]?polic|sensitive|nsfw|flagged|prohibited|blocked/i;
const GOOGLE_REFUSAL_FINISH = new Set(["SAFETY", "IMAGE_SAFETY", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII", "RECITATION", "IMAGE_PROHIBITED_CONTENT"]);

const REFUSES_WITH_4XX_ONLY: ReadonlySet<UpstreamProvider> = new Set(["openai", "openai-compatible", "bytedance"]);

/**
 * Whether an answer with this status can be a refusal at all. The OpenAI-style
 * APIs refuse only with a 4xx error, so their successful answers, each carrying
 * megabytes of base64 image, are not parsed a second time to look for one.
 */
export function mayRefuse(provider: UpstreamProvider, status: number): boolean {
  return !REFUSES_WITH_4XX_ONLY.has(provider) || (status >= 400 && status < 500);
}

/** A refusal reason when this upstream answer is a content-policy refusal, else undefined. */
export function detectRefusal(provider: UpstreamProvider, status: number, body: unknown): string | undefined {
  if (!mayRefuse(provider, status)) return undefined;
  const json = asObject(body);
  switch (provider) {
    case "openai":
    case "openai-compatible":
    case "bytedance": {
      const error = asObject(json.error);
      const code = text(error.code);
      const message = text(error.message);
      return POLICY_WORDS.test(code) || (code === "" && POLICY_WORDS.test(message)) ? message || code : undefined;
    }
    case "google": {
      const blockReason = text(asObject(json.promptFeedback).blockReason);
      if (blockReason && blockReason !== "BLOCK_REASON_UNSPECIFIED") return `prompt blocked (${blockReason})`;
      const candidate = asObject(Array.isArray(json.candidates) ? json.candidates[0] : undefined);
      const finish = text(candidate.finishReason);
      if (GOOGLE_REFUSAL_FINISH.has(finish)) return text(candidate.finishMessage) || `generation stopped (${finish})`;
      const predictions = Array.isArray(json.predictions) ? json.predictions.map(asObject) : [];
      const filtered = predictions.find((prediction) => typeof prediction.raiFilteredReason === "string");
      if (filtered && !predictions.some((prediction) => typeof prediction.bytesBase64Encoded === "string")) return text(filtered.raiFilteredReason);
      return undefined;
    }
    case "black-forest-labs": {
      const state = text(json.status) || text(json.state);
      return /moderated/i.test(state) ? `${state}` : undefined;
    }
    case "fal": {
      const detail = Array.isArray(json.detail) ? json.detail.map(asObject) : [];
      const violation = detail.find((item) => text(item.type) === "content_policy_violation");
      if (violation) return text(violation.msg) || "content policy violation";
      const nsfw = [json.has_nsfw_concepts, json.nsfw_content_detected].find(Array.isArray) as unknown[] | undefined;
      return nsfw && nsfw.length > 0 && nsfw.every((flag) => flag === true) ? "the result was flagged as NSFW" : undefined;
    }
    case "replicate": {
      if (text(json.status) !== "failed") return undefined;
      const error = text(json.error);
      return POLICY_WORDS.test(error) || /E005/.test(error) ? error : undefined;
    }
    default:
      return undefined;
  }
}
