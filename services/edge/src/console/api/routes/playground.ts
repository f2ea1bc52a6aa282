import type { FastifyInstance } from "fastify";
import { ErrorCode, ResponseFormat, type AccountLimits, type VerifiedKey } from "@orvado/proto";
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
import { jobLookup } from "../../../routes/jobs.ts";
import { streamImageJob } from "../../../routes/image-stream.ts";
import { jobRequest } from "../../../routes/image-job.ts";

// The fields the playground takes, judged by the same contract as
// POST /v1/images/generations (libs/core/src/image-request); what they mean (model,
// size, tier) is generation's to judge. background, moderation and user are for API clients.
const PLAYGROUND_FIELDS: readonly FieldName[] = ["model", "prompt", "size", "quality", "n", "output_format", "output_compression", "stream", "partial_images"];

/**
 * The signed-in account asking for itself, as a key: its own playground key id (playgroundKeyId:
 * no key limit, no model allowlist), so its spend is never mixed with another account's, and the
 * account's own limits, which apply to the playground as to its keys.
 */
function playgroundKey(accountId: string, limits: AccountLimits | undefined): VerifiedKey {
  return { $typeName: "orvado.v1.VerifiedKey", accountId, keyId: playgroundKeyId(accountId), models: [], accountLimits: limits };
}

/**
 * POST /playground: one generation as the signed-in account, under its playground
 * key id (playgroundKeyId: no key limit, no model allowlist: the account itself is asking), charged
 * to the account like any request, with the request's cost record in the answer; with `stream: true`,
 * as server-sent events, exactly as POST /v1/images/generations streams them (image-stream.ts). GET /playground/:id: that request's job, as GET /v1/images/generations/:id
 * answers it (202 while it runs), for the session's account.
 */
export function playgroundRoutes(api: FastifyInstance, deps: ConsoleApiDeps) {
  const { generation, billing, auth, publicUrl } = deps;
  api.post("/playground", async (request, reply) => {
    const shape = checkImageRequestBody(request.body ?? {}, PLAYGROUND_FIELDS);
    if (!shape.ok) throw refuse(shape.code, shape.message);
    const { accountId, limits } = sessionOf(request).account;
    const key = playgroundKey(accountId, limits);
    // request.id is a fresh request id (the app's genReqId), as on the images route.
    if (shape.stream) return streamImageJob(request, reply, { generation, publicUrl, heartbeatMs: deps.heartbeatMs }, key, "", shape.body, "image_generation");
    const answer = await jobOutcomeOrUnknown(request, reply, `GET /console/api/usage/${request.id}`, () =>
      generation.createImage({ ...jobRequest(request, key, "", { ...shape.body, partialImages: undefined }), responseFormat: ResponseFormat.URL }),
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

  api.get<{ Params: { id: string } }>("/playground/:id", jobLookup(deps, async (request) => sessionOf(request).account.accountId));
}
