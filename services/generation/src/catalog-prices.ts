import { setTimeout as sleep } from "node:timers/promises";
import { tierName, type Logger } from "@orvado/core";
import type { BillingService, Price } from "@orvado/proto";
import type { Client } from "@orvado/rpc";
import type { Catalog } from "./catalog.ts";

// Where the catalog meets the price list: at start, generation asks billing (the price
// table's owner) for its prices and refuses to start while a tier the models file offers
// has none, since every request for it would be refused at its reservation. It is checked
// here, where every generation process starts, so it holds under `npm start`, the cluster
// and any other deployment alike. Prices are kept by the model's own id, never an alias.

/** How long a start waits for billing to answer before it gives up (billing starts first, but may be restarting). */
const BILLING_WAIT_MS = 60_000;
const RETRY_MS = 1_000;

/** Each model and tier of the catalog that billing has no price for, in catalog order. */
export function unpricedTiers(catalog: Catalog, prices: readonly Price[]): { model: string; tier: string }[] {
  const priced = new Set(prices.map((price) => `${price.model}\n${tierName(price.tier)}`));
  return [...catalog.values()].flatMap((model) =>
    model.tiers.map((tier) => ({ model: model.id, tier: tierName(tier) })).filter(({ model: id, tier }) => !priced.has(`${id}\n${tier}`)),
  );
}

/** The start's refusal: which tiers have no price, and the exact ways to give them one. */
export function unpricedMessage(missing: { model: string; tier: string }[]): string {
  const named = missing.map(({ model, tier }) => `model "${model}" offers the ${tier} tier, which has no price`).join("; ");
  const commands = missing.map(({ model, tier }) => `  npx orvado prices set --create --model ${model} --tier ${tier} --usd <USD per image>`);
  const byModel = new Map<string, string[]>();
  for (const { model, tier } of missing) byModel.set(model, [...(byModel.get(model) ?? []), tier]);
  const fileLines = [...byModel].map(([model, tiers]) => `  "${model}": { ${tiers.map((tier) => `"${tier}": "<USD per image>"`).join(", ")} }`);
  return [
    `models file: ${named} in billing, so every request for it would be refused. Give each a price, then start generation again:`,
    "with billing running (services started on their own, or the cluster's billing):",
    ...commands,
    "or, for `npm start` (billing adds the prices file's missing prices at every start), in the prices file (ORVADO_PRICES_FILE, by default config/prices.json):",
    ...fileLines,
    "or take the tier out of the model's tiers in the models file.",
  ].join("\n");
}

/** Throws the refusal above when a tier of the catalog has no price; waits for billing to answer first. */
export async function checkCatalogPrices(catalog: Catalog, billing: Client<typeof BillingService>, logger: Logger, waitMs = BILLING_WAIT_MS): Promise<void> {
  const missing = unpricedTiers(catalog, await pricesFrom(billing, logger, waitMs));
  if (missing.length > 0) throw new Error(unpricedMessage(missing));
}

async function pricesFrom(billing: Client<typeof BillingService>, logger: Logger, waitMs: number): Promise<Price[]> {
  const giveUpAt = Date.now() + waitMs;
  for (;;) {
    try {
      return (await billing.listPrices({}, { timeoutMs: 10_000 })).prices;
    } catch (error) {
      if (Date.now() >= giveUpAt) {
        throw new Error(`cannot check the models file's prices: billing did not answer within ${Math.round(waitMs / 1000)} s (${(error as Error).message})`);
      }
      logger.warn({ err: error }, "waiting for billing to check the models file's prices");
      await sleep(RETRY_MS);
    }
  }
}
