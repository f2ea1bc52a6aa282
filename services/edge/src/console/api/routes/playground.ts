import type { FastifyInstance } from "fastify";
import { ErrorCode, ResponseFormat } from "@orvado/proto";
import type { ConsoleApiDeps } from "../deps.ts";
import { refuse } from "../errors.ts";
import { usageRow } from "../format.ts";
import { playgroundKeyId } from "@orvado/core";
import { sendRefusal } from "../../../reply.ts";
import { sessionOf } from "../session.ts";
import { ownCost } from "../own-cost.ts";
import { answerItem } from "../../../images-answer.ts";
import { checkImageRequestBody, type FieldName } from "@orvado/core/image-request";
import { jobOutcomeOrUnknown } from "../../../job-outcome.ts";
import type { PlaygroundAnswer } from "../answers.ts";
import { publicBase } from "../../../host-header.ts";

// The fields the playground takes, judged by the same contract as
// POST /v1/images/generations (libs/core/src/image-request); what they mean (model,
// size, tier) is generation's to judge. background, moderation and user are for API clients.
const PLAYGROUND_FIELDS: readonly FieldName[] = ["model", "prompt", "size", "quality", "n", "output_format", "output_compression"];

/**
 * POST /playground: one generation as the signed-in account, under its playground
 * key id (playgroundKeyId: no key limit, no model allowlist: the account itself is asking), charged
 * to the account like any request, with the request's cost record in the answer.
 */
export function playgroundRoutes(api: FastifyInstance, { generation, billing, auth, publicUrl }: ConsoleApiDeps) {
  api.post("/playground", async (request, reply) => {
    const shape = checkImageRequestBody(request.body ?? {}, PLAYGROUND_FIELDS);
    if (!shape.ok) throw refuse(shape.code, shape.message);
    const { accountId, limits } = sessionOf(request).account;
    // request.id is a fresh request id (the app's genReqId), as on the images route.
    const answer = await jobOutcomeOrUnknown(request, reply, `GET /console/api/usage/${request.id}`, () =>
      generation.createImage({
        requestId: request.id,
        accountId,
        // The account's own playground key, so its spend is never mixed with another account's.
        keyId: playgroundKeyId(accountId),
        allowedModels: [],
        ...shape.body,
        responseFormat: ResponseFormat.URL,
        // The account's own limits apply to the playground as to its keys.
        limits: { accountMaxConcurrentJobs: limits?.maxConcurrentJobs, accountRequestsPerMinute: limits?.requestsPerMinute },
      }),
    );
    if (!answer) return reply;
    if (answer.result.case !== "images") {
      if (!answer.result.value) throw refuse(ErrorCode.INTERNAL_ERROR, "The generation service gave no answer");
      return sendRefusal(request, reply, answer.result.value);
    }
    const base = publicBase(request, publicUrl);
    const { createdUnix, data } = answer.result.value;
    const [cost, { keys }] = await Promise.all([ownCost(billing, accountId, request.id), auth.listKeys({ accountId })]);
    const images: PlaygroundAnswer = {
      created: Number(createdUnix),
      data: data.map((image) => answerItem(image, base)),
      requestId: request.id,
      cost: cost ? usageRow(cost, new Map(keys.map((key) => [key.keyId, key.name]))) : null,
    };
    return images;
  });
}
