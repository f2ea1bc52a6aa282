import type { FastifyInstance } from "fastify";
import { microsToUsd, tierName } from "@orvado/core";
import { Tier, type Price } from "@orvado/proto";
import { modelJson } from "../format.ts";
import type { ConsoleApiDeps } from "../deps.ts";
import type { ModelsAnswer } from "../answers.ts";

/** model id → tier name → USD, from billing's price table. */
export function pricesByModel(prices: Price[]) {
  const byModel = new Map<string, Record<string, string>>();
  for (const price of prices) {
    if (price.tier === Tier.TIER_UNSPECIFIED) continue;
    const entry = byModel.get(price.model) ?? {};
    entry[tierName(price.tier)] = microsToUsd(price.priceMicros);
    byModel.set(price.model, entry);
  }
  return byModel;
}

/** GET /models: the catalog (generation) with each tier's price (billing). */
export function modelRoutes(api: FastifyInstance, { generation, billing }: ConsoleApiDeps) {
  api.get("/models", async (): Promise<ModelsAnswer> => {
    const [{ models }, { prices }] = await Promise.all([generation.listModels({}), billing.listPrices({})]);
    const byModel = pricesByModel(prices);
    return {
      models: models.map((model) => ({ ...modelJson(model), prices: byModel.get(model.id) ?? {} })),
    };
  });
}
