import type { FastifyReply, FastifyRequest } from "fastify";
import { ErrorCode } from "@orvado/proto";
import { sendError } from "./reply.ts";

// Text from a client must be well-formed Unicode. JSON can spell an unpaired
// UTF-16 surrogate ("a\ud800b"), which no UTF-8 encoding can carry: protobuf
// refuses it between the services, PostgreSQL refuses it in a text column. Such
// text is refused (not replaced with U+FFFD) so that what is stored, priced and
// shown is exactly what the client sent.

/** With the u flag a regular expression reads code points, and an unpaired surrogate is one of category Cs. */
const UNPAIRED_SURROGATE = /\p{Cs}/u;

const hasUnpairedSurrogate = (text: string) => UNPAIRED_SURROGATE.test(text);

/**
 * Where in a parsed JSON value (or query) the first ill-formed string is, as a
 * field path ("prompt", "models[2]", "" for the value itself), or null when all text
 * is well-formed. Iterative, so a deeply nested body cannot exhaust the stack.
 */
export function findIllFormedText(value: unknown): string | null {
  const pending: [unknown, string][] = [[value, ""]];
  for (let item = pending.pop(); item !== undefined; item = pending.pop()) {
    const [current, path] = item;
    if (typeof current === "string") {
      if (hasUnpairedSurrogate(current)) return path;
    } else if (Array.isArray(current)) {
      current.forEach((element, index) => pending.push([element, `${path}[${index}]`]));
    } else if (typeof current === "object" && current !== null) {
      for (const [name, field] of Object.entries(current)) {
        if (hasUnpairedSurrogate(name)) return path === "" ? "A field name" : `A field name in ${path}`;
        pending.push([field, path === "" ? name : `${path}.${name}`]);
      }
    }
  }
  return null;
}

/** A preValidation hook: 400 invalid_field naming the field, before any route reads the request. */
export async function refuseIllFormedText(request: FastifyRequest, reply: FastifyReply) {
  const where = findIllFormedText(request.body) ?? findIllFormedText(request.query);
  if (where === null) return;
  const field = where === "" ? "The request body" : where;
  await sendError(
    request,
    reply,
    ErrorCode.INVALID_FIELD,
    `${field} is not well-formed Unicode text: it holds an unpaired UTF-16 surrogate (such as \\ud800); send valid UTF-8 text`,
  );
  return reply;
}
