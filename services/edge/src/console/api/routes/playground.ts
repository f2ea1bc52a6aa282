import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { ErrorCode, ResponseFormat, type CreateImageResponse, type GeneratedImage } from "@orvado/proto";
import type { ConsoleApiDeps } from "../deps.ts";
import { refuse } from "../errors.ts";
import { usageRow } from "../format.ts";
import { playgroundKeyId } from "@orvado/core";
import { sendRefusal } from "../../../reply.ts";
import { sessionOf } from "../session.ts";
import { ownCost } from "../own-cost.ts";
import { answerItem } from "../../../images-answer.ts";
import { checkImageRequestBody, type FieldName } from "@orvado/core/image-request";
import { jobOutcomeOrUnknown, lostCall } from "../../../job-outcome.ts";
import type { PlaygroundAnswer } from "../answers.ts";
import { publicBase } from "../../../host-header.ts";
import { jobLookup } from "../../../routes/jobs.ts";
import { openEventStream, streamOptions } from "../playground-stream.ts";

// The fields the playground takes, judged by the same contract as
// POST /v1/images/generations (libs/core/src/image-request); what they mean (model,
// size, tier) is generation's to judge. background, moderation and user are for API clients.
// `stream` and `partial_images` are taken off first (playground-stream.ts).
const PLAYGROUND_FIELDS: readonly FieldName[] = ["model", "prompt", "size", "quality", "n", "output_format", "output_compression"];

/** The stream's completed event counts no tokens: Orvado charges per image, and the cost is the request's usage row. */
const NO_TOKENS = { total_tokens: 0, input_tokens: 0, output_tokens: 0, input_tokens_details: { text_tokens: 0, image_tokens: 0 } };

/**
 * POST /playground: one generation as the signed-in account, under its playground
 * key id (playgroundKeyId: no key limit, no model allowlist: the account itself is asking), charged
 * to the account like any request, with the request's cost record in the answer; with `stream: true`,
 * as server-sent events. GET /playground/:id: that request's job, as GET /v1/images/generations/:id
 * answers it (202 while it runs), for the session's account.
 */
export function playgroundRoutes(api: FastifyInstance, deps: ConsoleApiDeps) {
  const { generation, billing, auth, publicUrl } = deps;
  api.post("/playground", async (request, reply) => {
    const options = streamOptions(request.body ?? {});
    if (!options.ok) throw refuse(ErrorCode.INVALID_FIELD, options.message);
    const shape = checkImageRequestBody(options.request, PLAYGROUND_FIELDS);
    if (!shape.ok) throw refuse(shape.code, shape.message);
    const { accountId, limits } = sessionOf(request).account;
    // request.id is a fresh request id (the app's genReqId), as on the images route.
    const run = (responseFormat: ResponseFormat) =>
      generation.createImage({
        requestId: request.id,
        accountId,
        // The account's own playground key, so its spend is never mixed with another account's.
        keyId: playgroundKeyId(accountId),
        allowedModels: [],
        ...shape.body,
        responseFormat,
        // The account's own limits apply to the playground as to its keys.
        limits: { accountMaxConcurrentJobs: limits?.maxConcurrentJobs, accountRequestsPerMinute: limits?.requestsPerMinute },
      });
    if (options.stream) return streamJob(request, reply, run(ResponseFormat.B64_JSON), shape.body);
    const answer = await jobOutcomeOrUnknown(request, reply, `GET /console/api/usage/${request.id}`, () => run(ResponseFormat.URL));
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

/**
 * The job's outcome as events: one `image_generation.completed` per image, or an `error`. Partial
 * images travel as `image_generation.partial_image` once generation streams them to the edge; the
 * unary call gives none, so today a stream carries the outcome only.
 */
async function streamJob(request: FastifyRequest, reply: FastifyReply, job: Promise<CreateImageResponse>, asked: AskedFor) {
  const events = openEventStream(reply);
  try {
    const answer = await job;
    if (answer.result.case === "images") {
      const created = Number(answer.result.value.createdUnix);
      for (const image of answer.result.value.data) events.send(completedEvent(image, created, asked));
    } else if (answer.result.value) {
      events.fail(answer.result.value.code, answer.result.value.message, request.id);
    } else {
      events.fail(ErrorCode.INTERNAL_ERROR, "The generation service gave no answer", request.id);
    }
  } catch (error) {
    // Said as jobOutcomeOrUnknown says it in a plain answer (never reached, refused, or outcome unknown).
    const lost = lostCall(error, `GET /console/api/usage/${request.id}`);
    request.log[lost.level]({ err: error }, lost.log);
    events.fail(lost.code, lost.message, request.id);
  }
  events.end();
  return reply;
}

/** What the request asked for that the completed event repeats (the contract's RPC fields). */
type AskedFor = { quality?: string; background?: string; outputFormat?: string };

function completedEvent(image: GeneratedImage, created: number, asked: AskedFor) {
  return {
    type: "image_generation.completed",
    b64_json: image.content.case === "b64Json" ? image.content.value : "",
    created_at: created,
    size: `${image.width}x${image.height}`,
    quality: asked.quality || "auto",
    background: asked.background || "auto",
    output_format: asked.outputFormat || "png",
    usage: NO_TOKENS,
  };
}
