import { asObject, text, type Json } from "../refusal-parts.ts";

/** fal answers a content_policy_violation detail, or images every one of which it flagged as NSFW. */
export function falRefusal(json: Json): string | undefined {
  const detail = Array.isArray(json.detail) ? json.detail.map(asObject) : [];
  const violation = detail.find((item) => text(item.type) === "content_policy_violation");
  if (violation) return text(violation.msg) || "content policy violation";
  const nsfw = [json.has_nsfw_concepts, json.nsfw_content_detected].find(Array.isArray) as unknown[] | undefined;
  return nsfw && nsfw.length > 0 && nsfw.every((flag) => flag === true) ? "the result was flagged as NSFW" : undefined;
}
