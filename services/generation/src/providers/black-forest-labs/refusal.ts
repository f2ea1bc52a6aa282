import { text, type Json } from "../refusal-parts.ts";

/** Black Forest Labs answers a poll with the status "Request Moderated" or "Content Moderated". */
export function blackForestLabsRefusal(json: Json): string | undefined {
  const state = text(json.status) || text(json.state);
  return /moderated/i.test(state) ? `${state}` : undefined;
}
