import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { CostStatus, ErrorCode, type BillingService, type GenerationService } from "@orvado/proto";
import { Code, ConnectError, type Client } from "@orvado/rpc";
import { errorBody, httpStatusFor, isRequestId } from "@orvado/core";
import { sendError, sendRefusal } from "../reply.ts";
import type { KeyChecker } from "../key-check.ts";
import { publicBase } from "../host-header.ts";

/** Seconds a client is told to wait before asking about a running job again. */
const POLL_AFTER_SECONDS = 5;

export interface JobLookupDeps {
  generation: Client<typeof GenerationService>;
  billing: Client<typeof BillingService>;
  publicUrl?: string;
}

/** Whose requests the caller may look up: an account id, or null once a refusal has been answered. */
export type LookupAccount = (request: FastifyRequest, reply: FastifyReply) => Promise<string | null>;

/**
 * GET /v1/images/generations/<request id> (docs/api.md): a client that left
 * before its job finished fetches the result here instead of paying for a retry.
 * Only the caller's own account's requests are visible; any other id is 404.
 */
export function jobRoutes(app: FastifyInstance, deps: JobLookupDeps & { keys: KeyChecker }) {
  const keyAccount: LookupAccount = async (request, reply) => {
    const key = await deps.keys.check(request.headers.authorization);
    if (key.ok) return key.key.accountId;
    await sendRefusal(request, reply, key.refusal);
    return null;
  };
  app.get<{ Params: { id: string } }>("/v1/images/generations/:id", jobLookup(deps, keyAccount));
}

/** The lookup's handler, for the key's account on /v1 and the session's on the console's playground. */
export function jobLookup(deps: JobLookupDeps, accountOf: LookupAccount) {
  return async (request: FastifyRequest<{ Params: { id: string } }>, reply: FastifyReply) => {
    const accountId = await accountOf(request, reply);
    if (accountId === null) return reply;
    const lookedUp = request.params.id;
    const notFound = () => sendError(request, reply, ErrorCode.NOT_FOUND, `No request ${JSON.stringify(lookedUp.slice(0, 64))}`);
    if (!isRequestId(lookedUp)) return notFound();
    let state;
    try {
      ({ state } = await deps.generation.getJob({ requestId: lookedUp, accountId }));
    } catch (error) {
      if (!(error instanceof ConnectError && error.code === Code.NotFound)) throw error;
      const held = await rowlessRequest(deps.billing, lookedUp, accountId);
      if (held?.state === "running") return running(reply, lookedUp, held.createdUnix);
      if (held?.state === "not_run") return sendFailure(reply, { code: ErrorCode.ASYNC_IMAGE_FAILED, message: NOT_RUN_MESSAGE, shouldRetry: true }, lookedUp);
      return notFound();
    }
    if (state.case === "running") {
      const { createdUnix, progress, previewUrlPath } = state.value;
      const base = publicBase(request, deps.publicUrl);
      return running(reply, lookedUp, Number(createdUnix), { progress, previewUrl: previewUrlPath ? `${base}${previewUrlPath}` : undefined });
    }
    if (state.case === "images") {
      const base = publicBase(request, deps.publicUrl);
      return {
        created: Number(state.value.createdUnix),
        // Every image comes back as a link, also for a job that asked for b64_json (docs/api.md).
        data: state.value.data.map((image) => ({ url: `${base}${image.content.case === "urlPath" ? image.content.value : ""}` })),
      };
    }
    const failure = state.value;
    if (!failure) return sendError(request, reply, ErrorCode.INTERNAL_ERROR, "The generation service gave no answer");
    return sendFailure(reply, failure, lookedUp);
  };
}

/** The looked-up request's failure; its message names that request's id. */
function sendFailure(reply: FastifyReply, failure: { code: ErrorCode; message: string; shouldRetry: boolean }, requestId: string) {
  if (httpStatusFor(failure.code) >= 500) reply.header("x-should-retry", String(failure.shouldRetry));
  return reply.code(httpStatusFor(failure.code)).send(errorBody(failure.code, failure.message, requestId));
}

/**
 * A running job's 202, the lookup's and an async submit's (image-submit.ts): the same shape and Retry-After;
 * with its progress (0-1) and a link to its newest preview once its upstream reported them.
 */
export function running(reply: FastifyReply, requestId: string, createdUnix: number, seen: { progress?: number; previewUrl?: string } = {}) {
  reply.code(202).header("retry-after", String(POLL_AFTER_SECONDS));
  return {
    id: requestId,
    object: "image.generation",
    status: "running",
    created: createdUnix,
    // A float32 on the wire: rounded so 0.3 reads 0.3, not 0.30000001192092896.
    ...(seen.progress !== undefined && { progress: Math.round(seen.progress * 1000) / 1000 }),
    ...(seen.previewUrl && { preview_url: seen.previewUrl }),
  };
}

const NOT_RUN_MESSAGE = "The request's job ended before it was recorded (its service stopped, or its outcome could not be written); it was not charged";

/**
 * A request of this account that generation has no row for: a job has its row only once it
 * has run for a second, or at its end (docs/architecture.md#one-request-step-by-step, step 8).
 * Its cost record tells the rest: a hold still open is a job running (or lost, until its hold
 * expires), one released without a charge is a job that ended unrecorded. Null: unknown here
 * too, or refused before any hold (404 as before).
 */
async function rowlessRequest(
  billing: Client<typeof BillingService>,
  requestId: string,
  accountId: string,
): Promise<{ state: "running"; createdUnix: number } | { state: "not_run" } | null> {
  let cost;
  try {
    ({ cost } = await billing.getCost({ requestId, accountId }));
  } catch (error) {
    if (error instanceof ConnectError && error.code === Code.NotFound) return null;
    throw error;
  }
  if (cost?.status === CostStatus.PENDING) return { state: "running", createdUnix: Math.floor(Number(cost.createdAtUnixMs) / 1000) };
  if (cost?.status === CostStatus.NOT_CHARGED) return { state: "not_run" };
  return null;
}

