import type { FastifyReply, FastifyRequest } from "fastify";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { ErrorCode, type CreateImageRequestSchema, type CreateImageResponse, type GenerationService } from "@orvado/proto";
import type { Client } from "@orvado/rpc";
import { sendError, sendRefusal } from "../reply.ts";
import { imagesAnswerBody } from "../images-answer.ts";
import type { VerifiedKey } from "@orvado/proto";
import { jobOutcomeOrUnknown } from "../job-outcome.ts";
import { publicBase } from "../host-header.ts";

// What a generation and an edit share once their bodies are read: the Idempotency-Key
// header, the CreateImage call (billing, capacity, failover happen in generation) and the
// answer. No abort signal is passed on purpose: a client that leaves does not cancel its job (docs/api.md#how-long-a-call-takes).

export interface ImageJobDeps {
  generation: Client<typeof GenerationService>;
  publicUrl?: string;
}

/** Visible ASCII, 1–255 characters (docs/api.md, "Idempotent retries"); generation checks it again. */
const IDEMPOTENCY_KEY = /^[\x21-\x7E]{1,255}$/;

export type JobFields = Omit<MessageInitShape<typeof CreateImageRequestSchema>, "$typeName" | "requestId" | "accountId" | "keyId" | "keyLimitMicros" | "allowedModels" | "idempotencyKey" | "limits">;

/** The Idempotency-Key header, "" when absent, or null after answering 400 for a malformed one. */
export function idempotencyKeyOf(request: FastifyRequest, reply: FastifyReply): string | null {
  const value = request.headers["idempotency-key"];
  if (value === undefined) return "";
  if (typeof value === "string" && IDEMPOTENCY_KEY.test(value)) return value;
  sendError(request, reply, ErrorCode.INVALID_REQUEST, "The Idempotency-Key header must be 1 to 255 visible ASCII characters (no spaces)");
  return null;
}

/**
 * An idempotent retry answers as its original request: the original's request id
 * in the headers and in any error message, so the cost lookup shows the one charge.
 */
export function answerAs(reply: FastifyReply, requestId: string) {
  reply.header("x-gateway-request-id", requestId).header("x-request-id", requestId).header("idempotent-replayed", "true");
}

/** The CreateImage (or SubmitImage) request of a generation or an edit, under the caller's key and its limits. */
export function jobRequest(request: FastifyRequest, key: VerifiedKey, idempotencyKey: string, fields: JobFields) {
  return {
    requestId: request.id,
    accountId: key.accountId,
    keyId: key.keyId,
    keyLimitMicros: key.limitMicros,
    allowedModels: key.models,
    ...fields,
    idempotencyKey,
    limits: {
      accountMaxConcurrentJobs: key.accountLimits?.maxConcurrentJobs,
      accountRequestsPerMinute: key.accountLimits?.requestsPerMinute,
      keyRequestsPerMinute: key.requestsPerMinute,
    },
  };
}

/** Where a client reads a request's outcome later (docs/api.md#job-lookup). */
export const jobLookupPath = (requestId: string) => `/v1/images/generations/${requestId}`;

/**
 * Starts the job's call and answers when it ends. Not itself async: the call is held
 * open for the job's whole duration, and only answerImageJob's few values wait with it
 * (not the body's fields, the key or the request message; docs/performance.md#where-the-memory-goes).
 */
export function runImageJob(request: FastifyRequest, reply: FastifyReply, deps: ImageJobDeps, key: VerifiedKey, idempotencyKey: string, fields: JobFields) {
  const outcome = jobOutcomeOrUnknown(request, reply, `GET ${jobLookupPath(request.id)}`, () => deps.generation.createImage(jobRequest(request, key, idempotencyKey, fields)));
  return answerImageJob(request, reply, deps.publicUrl, outcome);
}

async function answerImageJob(request: FastifyRequest, reply: FastifyReply, publicUrl: string | undefined, outcome: Promise<CreateImageResponse | null>) {
  const answer = await outcome;
  if (!answer) return reply;
  return answerEndedJob(request, reply, publicUrl, answer);
}

/** A job's answer once it has ended: its images, or its refusal (an idempotent retry's as the original's). */
export function answerEndedJob(request: FastifyRequest, reply: FastifyReply, publicUrl: string | undefined, answer: Pick<CreateImageResponse, "result" | "replayed" | "requestId">) {
  const replayedFrom = answer.replayed && answer.requestId ? answer.requestId : null;
  if (replayedFrom) answerAs(reply, replayedFrom);
  if (answer.result.case !== "images") {
    return answer.result.value
      ? sendRefusal(request, reply, answer.result.value, replayedFrom ?? request.id)
      : sendError(request, reply, ErrorCode.INTERNAL_ERROR, "The generation service gave no answer");
  }
  const base = publicBase(request, publicUrl);
  const { createdUnix, data } = answer.result.value;
  return reply.type("application/json; charset=utf-8").send(imagesAnswerBody(createdUnix, data, base));
}
