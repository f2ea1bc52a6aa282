import type { FastifyInstance } from "fastify";
import { ErrorCode, type GenerationService } from "@orvado/proto";
import { Code, ConnectError, type Client } from "@orvado/rpc";
import { errorBody, httpStatusFor, isRequestId } from "@orvado/core";
import { sendError, sendRefusal } from "../reply.ts";
import type { KeyChecker } from "../key-check.ts";

/** Seconds a client is told to wait before asking about a running job again. */
const POLL_AFTER_SECONDS = 5;

/**
 * GET /v1/images/generations/<request id> (docs/api.md): a client that left
 * before its job finished fetches the result here instead of paying for a retry.
 * Only the caller's own account's requests are visible; any other id is 404.
 */
export function jobRoutes(app: FastifyInstance, deps: { keys: KeyChecker; generation: Client<typeof GenerationService>; publicUrl?: string }) {
  app.get<{ Params: { id: string } }>("/v1/images/generations/:id", async (request, reply) => {
    const key = await deps.keys.check(request.headers.authorization);
    if (!key.ok) return sendRefusal(request, reply, key.refusal);
    const lookedUp = request.params.id;
    const notFound = () => sendError(request, reply, ErrorCode.NOT_FOUND, `No request ${JSON.stringify(lookedUp.slice(0, 64))}`);
    if (!isRequestId(lookedUp)) return notFound();
    let state;
    try {
      ({ state } = await deps.generation.getJob({ requestId: lookedUp, accountId: key.key.accountId }));
    } catch (error) {
      if (error instanceof ConnectError && error.code === Code.NotFound) return notFound();
      throw error;
    }
    if (state.case === "running") {
      reply.code(202).header("retry-after", String(POLL_AFTER_SECONDS));
      return { id: lookedUp, object: "image.generation", status: "running", created: Number(state.value.createdUnix) };
    }
    if (state.case === "images") {
      const base = deps.publicUrl ?? `${request.protocol}://${request.host}`;
      return {
        created: Number(state.value.createdUnix),
        // Every image comes back as a link, also for a job that asked for b64_json (docs/api.md).
        data: state.value.data.map((image) => ({ url: `${base}${image.content.case === "urlPath" ? image.content.value : ""}` })),
      };
    }
    const failure = state.value;
    if (!failure) return sendError(request, reply, ErrorCode.INTERNAL_ERROR, "The generation service gave no answer");
    // The failure belongs to the looked-up request, so its message names that request's id.
    if (httpStatusFor(failure.code) >= 500) reply.header("x-should-retry", String(failure.shouldRetry));
    return reply.code(httpStatusFor(failure.code)).send(errorBody(failure.code, failure.message, lookedUp));
  });
}
