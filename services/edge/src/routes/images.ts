import type { FastifyInstance } from "fastify";
import type { GenerationService } from "@orvado/proto";
import type { Client } from "@orvado/rpc";
import { sendError, sendRefusal } from "../reply.ts";
import { checkImageRequestBody } from "@orvado/core/image-request";
import type { KeyChecker } from "../key-check.ts";
import { idempotencyKeyOf, runImageJob } from "./image-job.ts";
import { streamImageJob } from "./image-stream.ts";
import { submitImageJob } from "./image-submit.ts";
import { prefersRespondAsync } from "../prefer.ts";

/**
 * POST /v1/images/generations (docs/api.md#creating-images): key check, then Idempotency-Key, then shape,
 * then the job, answered at its end, with `Prefer: respond-async` once it runs (image-submit.ts), or
 * with `stream` as server-sent events (image-stream.ts).
 */
export function imageRoutes(app: FastifyInstance, deps: { keys: KeyChecker; generation: Client<typeof GenerationService>; publicUrl?: string; heartbeatMs: number }) {
  app.post("/v1/images/generations", async (request, reply) => {
    const key = await deps.keys.check(request.headers.authorization);
    if (!key.ok) return sendRefusal(request, reply, key.refusal);
    const idempotencyKey = idempotencyKeyOf(request, reply);
    if (idempotencyKey === null) return reply;
    const shape = checkImageRequestBody(request.body);
    if (!shape.ok) return sendError(request, reply, shape.code, shape.message);
    // A stream answers a long job itself: Prefer: respond-async is not applied to one.
    if (shape.stream) return streamImageJob(request, reply, deps, key.key, idempotencyKey, shape.body, "image_generation");
    // partial_images without stream is accepted and ignored, as OpenAI does.
    return (prefersRespondAsync(request.headers.prefer) ? submitImageJob : runImageJob)(request, reply, deps, key.key, idempotencyKey, { ...shape.body, partialImages: undefined });
  });
}
