import type { FastifyReply, FastifyRequest } from "fastify";
import { ErrorCode, type Refusal } from "@orvado/proto";
import { errorBody, httpStatusFor } from "@orvado/core";

/** Every error leaves through here: the spec's body (2.6) with the status of its code. */
export function sendError(request: FastifyRequest, reply: FastifyReply, code: ErrorCode, message: string) {
  return reply.code(httpStatusFor(code)).send(errorBody(code, message, request.id));
}

/** A refusal from a service, with the retry hints SDKs read. */
export function sendRefusal(request: FastifyRequest, reply: FastifyReply, refusal: Refusal) {
  if (refusal.code === ErrorCode.NO_CAPACITY) reply.header("retry-after", String(refusal.retryAfterSeconds || 60));
  if (httpStatusFor(refusal.code) >= 500) reply.header("x-should-retry", String(refusal.shouldRetry));
  return sendError(request, reply, refusal.code, refusal.message);
}
