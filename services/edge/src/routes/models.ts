import type { FastifyInstance } from "fastify";
import { ErrorCode, type GenerationService, type Model } from "@orvado/proto";
import type { Client } from "@orvado/rpc";
import { tierName } from "@orvado/core";
import { sendError } from "../reply.ts";

/** One model in OpenAI's model object shape (id, object, created, owned_by), with Orvado's details beside it. */
function modelObject(model: Model) {
  return {
    id: model.id,
    object: "model",
    created: Number(model.createdUnix),
    owned_by: model.sandbox ? "orvado-sandbox" : "orvado",
    // Other names that run this model; /v1/models/{alias} answers with this object (docs/api.md#models-and-families).
    aliases: model.aliases,
    family: model.family,
    tiers: model.tiers.map(tierName),
    edits: model.edits,
    sandbox: model.sandbox,
    ...(model.sandbox ? { note: "Served by the Orvado sandbox renderer: real PNGs of the requested size, not a real model" } : {}),
    channels: model.channels.map((channel) => ({ name: channel.name, provider: channel.provider, healthy: channel.healthy })),
  };
}

/** Every model under its id and under each of its aliases (the catalog refuses a name given twice). */
export function modelsByName(models: Model[]): Map<string, Model> {
  return new Map(models.flatMap((model) => [model.id, ...model.aliases].map((name) => [name, model] as const)));
}

/** GET /v1/models (the OpenAI list shape) and GET /v1/models/{id} (the SDK's models.retrieve). */
export function modelRoutes(app: FastifyInstance, deps: { generation: Client<typeof GenerationService> }) {
  app.get("/v1/models", async () => {
    const { models } = await deps.generation.listModels({});
    return { object: "list", data: models.map(modelObject) };
  });

  app.get<{ Params: { id: string } }>("/v1/models/:id", async (request, reply) => {
    const { models } = await deps.generation.listModels({});
    // A Map keyed by the catalog's own ids and aliases: "constructor" or "__proto__" finds nothing.
    const model = modelsByName(models).get(request.params.id);
    if (!model) return sendError(request, reply, ErrorCode.NOT_FOUND, `No model ${JSON.stringify(request.params.id.slice(0, 100))}; GET /v1/models lists them`);
    return modelObject(model);
  });
}
