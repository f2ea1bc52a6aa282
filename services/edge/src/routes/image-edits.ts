import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { ErrorCode, type GenerationService } from "@orvado/proto";
import type { Client } from "@orvado/rpc";
import { sendError, sendRefusal } from "../reply.ts";
import { checkImageRequestBody } from "@orvado/core/image-request";
import type { KeyChecker } from "../key-check.ts";
import type { EditUploadLimits } from "../config.ts";
import { readEditUpload } from "../edit-upload.ts";
import { idempotencyKeyOf, runImageJob } from "./image-job.ts";
import { streamImageJob } from "./image-stream.ts";
import { submitImageJob } from "./image-submit.ts";
import { prefersRespondAsync } from "../prefer.ts";
import { modelsByName } from "./models.ts";

interface EditDeps {
  keys: KeyChecker;
  generation: Client<typeof GenerationService>;
  publicUrl?: string;
  limits: EditUploadLimits;
  heartbeatMs: number;
}

/**
 * POST /v1/images/edits (OpenAI's image edits, docs/api.md "Image edits"): key check,
 * Idempotency-Key, the multipart upload within its bounds, the fields as for a generation,
 * then the same job path (generation checks the model edits and reads the files).
 */
export function imageEditRoutes(app: FastifyInstance, deps: EditDeps) {
  app.post("/v1/images/edits", async (request, reply) => {
    const key = await deps.keys.check(request.headers.authorization);
    if (!key.ok) return sendRefusal(request, reply, key.refusal);
    const idempotencyKey = idempotencyKeyOf(request, reply);
    if (idempotencyKey === null) return reply;
    if (!request.isMultipart()) return refuseNotMultipart(request, reply, deps.generation);
    const read = await readEditUpload(request, deps.limits);
    if (!read.ok) return sendError(request, reply, read.code, read.message);
    const shape = checkImageRequestBody(read.upload.fields);
    if (!shape.ok) return sendError(request, reply, shape.code, shape.message);
    const { images, mask } = read.upload;
    const fields = { ...shape.body, edit: true, inputImages: images, mask };
    // A stream answers a long job itself: Prefer: respond-async is not applied to one.
    if (shape.stream) return streamImageJob(request, reply, deps, key.key, idempotencyKey, fields, "image_edit");
    // partial_images without stream is accepted and ignored, as OpenAI does.
    return (prefersRespondAsync(request.headers.prefer) ? submitImageJob : runImageJob)(request, reply, deps, key.key, idempotencyKey, { ...fields, partialImages: undefined });
  });
}

/**
 * An edit that is not multipart/form-data. A model that does not edit is said so whatever
 * the body's type (a client should not switch encodings to find that out); otherwise the
 * body's type is the problem.
 */
async function refuseNotMultipart(request: FastifyRequest, reply: FastifyReply, generation: Client<typeof GenerationService>) {
  const body = request.body;
  const model = typeof body === "object" && body !== null && !Array.isArray(body) ? (body as Record<string, unknown>).model : undefined;
  if (typeof model === "string") {
    const { models } = await generation.listModels({});
    const found = modelsByName(models).get(model);
    if (found && !found.edits) return sendError(request, reply, ErrorCode.EDITS_NOT_AVAILABLE, `The model ${found.id} does not take image edits`);
  }
  return sendError(request, reply, ErrorCode.UNSUPPORTED_MEDIA_TYPE, "An image edit is sent as multipart/form-data, with the image in a file field named image");
}
