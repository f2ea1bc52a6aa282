import type { FastifyInstance } from "fastify";
import type { GenerationService } from "@orvado/proto";
import type { Client } from "@orvado/rpc";
import { sendError, sendRefusal } from "../reply.ts";
import { checkImageRequestBody } from "@orvado/core/image-request";
import type { KeyChecker } from "../key-check.ts";
import { idempotencyKeyOf, runImageJob } from "./image-job.ts";
import { submitImageJob } from "./image-submit.ts";
import { prefersRespondAsync } from "../prefer.ts";

/**
 * POST /v1/images/generations (docs/api.md#creating-images): key check, then Idempotency-Key, then shape,
 * then the job, answered at its end or, with `Prefer: respond-async`, once it runs (image-submit.ts).
 */
export function imageRoutes(app: FastifyInstance, deps: { keys: KeyChecker; generation: Client<typeof GenerationService>; publicUrl?: string }) {
  app.post("/v1/images/generations", async (request, reply) => {
    const key = await deps.keys.check(request.headers.authorization);
    if (!key.ok) return sendRefusal(request, reply, key.refusal);
    const idempotencyKey = idempotencyKeyOf(request, reply);
    if (idempotencyKey === null) return reply;
    const shape = checkImageRequestBody(request.body);
    if (!shape.ok) return sendError(request, reply, shape.code, shape.message);
    return (prefersRespondAsync(request.headers.prefer) ? submitImageJob : runImageJob)(request, reply, deps, key.key, idempotencyKey, shape.body);
  });
}
