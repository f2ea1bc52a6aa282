// Pieces the providers' refusal rules (providers/<name>/refusal.ts) share.

export type Json = Record<string, unknown>;
export const asObject = (value: unknown): Json => (value !== null && typeof value === "object" ? (value as Json) : {});
export const text = (value: unknown) => (typeof value === "string" ? value : "");

export const POLICY_WORDS = /moderat|safety|content[ _-]?polic|sensitive|nsfw|flagged|prohibited|blocked/i;

/** OpenAI's error shape, which OpenAI-compatible servers and ByteDance share: a policy word in the code, or in the message when there is no code. */
export function openAiStyleRefusal(json: Json): string | undefined {
  const error = asObject(json.error);
  const code = text(error.code);
  const message = text(error.message);
  return POLICY_WORDS.test(code) || (code === "" && POLICY_WORDS.test(message)) ? message || code : undefined;
}
