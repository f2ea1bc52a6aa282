import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { ErrorCode, ResponseFormat } from "@orvado/proto";
import type { ConsoleApiDeps } from "../deps.ts";
import { parseInput, refuse } from "../errors.ts";
import { usageRow } from "../format.ts";
import { playgroundKeyId } from "@orvado/core";
import { sendRefusal } from "../../../reply.ts";
import { sessionOf } from "../session.ts";
import { ownCost } from "../own-cost.ts";
import { answerItem } from "../../../images-answer.ts";

// Types only; what the values mean (model, size, tier, n's range) is generation's to judge,
// exactly as for POST /v1/images/generations.
const Playground = z.strictObject({
  model: z.string(),
  prompt: z.string(),
  size: z.string().nullish(),
  quality: z.string().nullish(),
  n: z.number().int().min(1).nullish(),
});

/**
 * POST /playground: one generation as the signed-in account, under its playground
 * key id (playgroundKeyId: no key limit, no model allowlist: the account itself is asking), charged
 * to the account like any request, with the request's cost record in the answer.
 */
export function playgroundRoutes(api: FastifyInstance, { generation, billing, auth, publicUrl }: ConsoleApiDeps) {
  api.post("/playground", async (request, reply) => {
    const body = parseInput(Playground, request.body);
    const { accountId, limits } = sessionOf(request).account;
    // request.id is a fresh request id (the app's genReqId), as on the images route.
    const answer = await generation.createImage({
      requestId: request.id,
      accountId,
      // The account's own playground key, so its spend is never mixed with another account's.
      keyId: playgroundKeyId(accountId),
      allowedModels: [],
      model: body.model,
      prompt: body.prompt,
      ...(body.size != null && { size: body.size }),
      ...(body.quality != null && { quality: body.quality }),
      ...(body.n != null && { n: body.n }),
      responseFormat: ResponseFormat.URL,
      // The account's own limits apply to the playground as to its keys.
      limits: { accountMaxConcurrentJobs: limits?.maxConcurrentJobs, accountRequestsPerMinute: limits?.requestsPerMinute },
    });
    if (answer.result.case !== "images") {
      if (!answer.result.value) throw refuse(ErrorCode.INTERNAL_ERROR, "The generation service gave no answer");
      return sendRefusal(request, reply, answer.result.value);
    }
    const base = publicUrl ?? `${request.protocol}://${request.host}`;
    const { createdUnix, data } = answer.result.value;
    const [cost, { keys }] = await Promise.all([ownCost(billing, accountId, request.id), auth.listKeys({ accountId })]);
    return {
      created: Number(createdUnix),
      data: data.map((image) => answerItem(image, base)),
      requestId: request.id,
      cost: cost ? usageRow(cost, new Map(keys.map((key) => [key.keyId, key.name]))) : null,
    };
  });
}
