import { POLICY_WORDS, text, type Json } from "../refusal-parts.ts";

/** A failed Replicate prediction whose error names the policy (or Replicate's E005, "flagged as sensitive"). */
export function replicateRefusal(json: Json): string | undefined {
  if (text(json.status) !== "failed") return undefined;
  const error = text(json.error);
  return POLICY_WORDS.test(error) || /E005/.test(error) ? error : undefined;
}
