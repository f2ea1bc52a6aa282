import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { ErrorCode, type GenerationService } from "@orvado/proto";
import type { Client } from "@orvado/rpc";
import { sendError, sendRefusal } from "../reply.ts";
import { checkImageRequestBody } from "../image-request.ts";
import { imagesAnswerBody } from "../images-answer.ts";
import type { KeyChecker } from "../key-check.ts";
import { jobOutcomeOrUnknown } from "../job-outcome.ts";

/** Visible ASCII, 1–255 characters (docs/api.md, "Idempotent retries"); generation checks it again. */
const IDEMPOTENCY_KEY = /^[\x21-\x7E]{1,255}$/;

/**
 * An idempotent retry answers as its original request: the original's request id
 * in the headers and in any error message, so the cost lookup shows the one charge.
 */
function answerAs(reply: FastifyReply, requestId: string) {
  reply.header("x-gateway-request-id", requestId).header("x-request-id", requestId).header("idempotent-replayed", "true");
}

/** POST /v1/images/generations (spec 4.1): key check, then Idempotency-Key, then shape, then the job. */
export function imageRoutes(app: FastifyInstance, deps: { keys: KeyChecker; generation: Client<typeof GenerationService>; publicUrl?: string }) {
  app.post("/v1/images/generations", async (request, reply) => {
    const key = await deps.keys.check(request.headers.authorization);
    if (!key.ok) return sendRefusal(request, reply, key.refusal);
    const idempotencyKey = request.headers["idempotency-key"];
    if (idempotencyKey !== undefined && (typeof idempotencyKey !== "string" || !IDEMPOTENCY_KEY.test(idempotencyKey))) {
      return sendError(request, reply, ErrorCode.INVALID_REQUEST, "The Idempotency-Key header must be 1 to 255 visible ASCII characters (no spaces)");
    }
    const shape = checkImageRequestBody(request.body);
    if (!shape.ok) return sendError(request, reply, shape.code, shape.message);
    // No abort signal is passed on purpose: a client that leaves does not cancel its job (spec 3).
    const answer = await jobOutcomeOrUnknown(request, reply, `GET /v1/images/generations/${request.id}`, () => deps.generation.createImage({
      requestId: request.id,
      accountId: key.key.accountId,
      keyId: key.key.keyId,
      keyLimitMicros: key.key.limitMicros,
      allowedModels: key.key.models,
      ...shape.body,
      idempotencyKey: idempotencyKey ?? "",
      limits: {
        accountMaxConcurrentJobs: key.key.accountLimits?.maxConcurrentJobs,
        accountRequestsPerMinute: key.key.accountLimits?.requestsPerMinute,
        keyRequestsPerMinute: key.key.requestsPerMinute,
      },
    }));
    if (!answer) return reply;
    const replayedFrom = answer.replayed && answer.requestId ? answer.requestId : null;
    if (replayedFrom) answerAs(reply, replayedFrom);
    if (answer.result.case !== "images") {
      return answer.result.value
        ? sendRefusal(request, reply, answer.result.value, replayedFrom ?? request.id)
        : sendError(request, reply, ErrorCode.INTERNAL_ERROR, "The generation service gave no answer");
    }
    const base = deps.publicUrl ?? `${request.protocol}://${request.host}`;
    const { createdUnix, data } = answer.result.value;
    return reply.type("application/json; charset=utf-8").send(imagesAnswerBody(createdUnix, data, base));
  });

  // Spec 4.3: announced, not yet available. 400 so SDKs do not retry it.
  app.post("/v1/images/edits", async (request, reply) =>
    sendError(request, reply, ErrorCode.EDITS_NOT_AVAILABLE, "Image editing (POST /v1/images/edits) is not available yet; only generation is"),
  );
}
