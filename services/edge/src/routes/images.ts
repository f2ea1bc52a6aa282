import type { FastifyInstance } from "fastify";
import { ErrorCode, type GenerationService } from "@orvado/proto";
import type { Client } from "@orvado/rpc";
import { sendError, sendRefusal } from "../reply.ts";
import { checkImageRequestBody } from "../image-request.ts";
import type { KeyChecker } from "../key-check.ts";

/** POST /v1/images/generations (spec 4.1): key check, then shape, then the job. */
export function imageRoutes(app: FastifyInstance, deps: { keys: KeyChecker; generation: Client<typeof GenerationService>; publicUrl?: string }) {
  app.post("/v1/images/generations", async (request, reply) => {
    const key = await deps.keys.check(request.headers.authorization);
    if (!key.ok) return sendRefusal(request, reply, key.refusal);
    const shape = checkImageRequestBody(request.body);
    if (!shape.ok) return sendError(request, reply, shape.code, shape.message);
    // No abort signal is passed on purpose: a client that leaves does not cancel its job (spec 3).
    const answer = await deps.generation.createImage({
      requestId: request.id,
      accountId: key.key.accountId,
      keyId: key.key.keyId,
      keyLimitMicros: key.key.limitMicros,
      allowedModels: key.key.models,
      ...shape.body,
    });
    if (answer.result.case !== "images") {
      return answer.result.value
        ? sendRefusal(request, reply, answer.result.value)
        : sendError(request, reply, ErrorCode.INTERNAL_ERROR, "The generation service gave no answer");
    }
    const base = deps.publicUrl ?? `${request.protocol}://${request.host}`;
    const { createdUnix, data } = answer.result.value;
    return {
      created: Number(createdUnix),
      data: data.map((image) => (image.content.case === "b64Json" ? { b64_json: image.content.value } : { url: `${base}${image.content.value}` })),
    };
  });

  // Spec 4.3: announced, not yet available. 400 so SDKs do not retry it.
  app.post("/v1/images/edits", async (request, reply) =>
    sendError(request, reply, ErrorCode.EDITS_NOT_AVAILABLE, "Image editing (POST /v1/images/edits) is not available yet; only generation is"),
  );
}
