import { asObject, text, type Json } from "../refusal-parts.ts";

const GOOGLE_REFUSAL_FINISH = new Set(["SAFETY", "IMAGE_SAFETY", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII", "RECITATION", "IMAGE_PROHIBITED_CONTENT"]);

/** Gemini blocks the prompt or stops with a safety finish reason. */
export function googleRefusal(json: Json): string | undefined {
  const blockReason = text(asObject(json.promptFeedback).blockReason);
  if (blockReason && blockReason !== "BLOCK_REASON_UNSPECIFIED") return `prompt blocked (${blockReason})`;
  const candidate = asObject(Array.isArray(json.candidates) ? json.candidates[0] : undefined);
  const finish = text(candidate.finishReason);
  if (GOOGLE_REFUSAL_FINISH.has(finish)) return text(candidate.finishMessage) || `generation stopped (${finish})`;
  return undefined;
}
