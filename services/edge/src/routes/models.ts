import type { FastifyInstance } from "fastify";
import type { GenerationService } from "@orvado/proto";
import type { Client } from "@orvado/rpc";
import { tierName } from "@orvado/core";

/** GET /v1/models: the OpenAI list shape, with Orvado's details beside each id. */
export function modelRoutes(app: FastifyInstance, deps: { generation: Client<typeof GenerationService> }) {
  app.get("/v1/models", async () => {
    const { models } = await deps.generation.listModels({});
    return {
      object: "list",
      data: models.map((model) => ({
        id: model.id,
        object: "model",
        created: Number(model.createdUnix),
        owned_by: model.sandbox ? "orvado-sandbox" : "orvado",
        family: model.family,
        tiers: model.tiers.map(tierName),
        edits: model.edits,
        sandbox: model.sandbox,
        ...(model.sandbox ? { note: "Served by the Orvado sandbox renderer: real PNGs of the requested size, not a real model" } : {}),
        channels: model.channels.map((channel) => ({ name: channel.name, provider: channel.provider, healthy: channel.healthy })),
      })),
    };
  });
}
