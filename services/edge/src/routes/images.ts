import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { ErrorCode, type GenerationService } from "@orvado/proto";
import { Code, ConnectError, type Client } from "@orvado/rpc";
import { sendError, sendRefusal } from "../reply.ts";
import { checkImageRequestBody } from "../image-request.ts";
import { imagesAnswerBody } from "../images-answer.ts";
import type { KeyChecker } from "../key-check.ts";

/** Visible ASCII, 1–255 characters (docs/api.md, "Idempotent retries"); generation checks it again. */
const IDEMPOTENCY_KEY = /^[\x21-\x7E]{1,255}$/;

/**
 * An idempotent retry answers as its original request: the original's request id
 * in the headers and in any error message, so the cost lookup shows the one charge.
 */
function answerAs(reply: FastifyReply, requestId: string) {
  reply.header("x-gateway-request-id", requestId).header("x-request-id", requestId).header("idempotent-replayed", "true");
}

/**
 * The call that runs the job. If it breaks (generation restarted, the connection
 * cut), the job may still have finished and been charged, so the answer must not
 * invite a blind retry (spec 7's retry rule): 502 with x-should-retry: false,
 * pointing at the lookup that tells what happened.
 */
async function jobOutcomeOrUnknown<T>(request: FastifyRequest, reply: FastifyReply, call: () => Promise<T>): Promise<T | null> {
  try {
    return await call();
  } catch (error) {
    if (neverReached(error)) {
      // The connection was refused: the call never left, so no job exists and a retry is safe.
      request.log.warn({ err: error }, "generation unreachable; no job started");
      reply.header("retry-after", "5").header("x-should-retry", "true");
      await sendError(request, reply, ErrorCode.SERVICE_UNAVAILABLE, "The generation service is briefly unavailable; nothing was charged, retry in a few seconds");
      return null;
    }
    request.log.warn({ err: error }, "lost the connection to the job");
    reply.header("x-should-retry", "false");
    await sendError(
      request,
      reply,
      ErrorCode.JOB_OUTCOME_UNKNOWN,
      `The connection to the job was lost while it ran; it may still finish and be charged. Do not retry blindly: GET /v1/images/generations/${request.id} tells its outcome`,
    );
    return null;
  }
}

const NOT_CONNECTED = /\b(ECONNREFUSED|ENOTFOUND|EHOSTUNREACH|ENETUNREACH|EAI_AGAIN)\b/;

/** True when the call failed before a connection to generation existed (so before any job could start). */
function neverReached(error: unknown): boolean {
  if (!(error instanceof ConnectError) || error.code !== Code.Unavailable) return false;
  const text = `${error.message} ${String((error.cause as { code?: string } | undefined)?.code ?? "")}`;
  return NOT_CONNECTED.test(text);
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
    const answer = await jobOutcomeOrUnknown(request, reply, () => deps.generation.createImage({
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
