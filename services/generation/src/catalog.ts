import { readFileSync } from "node:fs";
import { z } from "zod";
import { TIER_NAMES, tierFromName } from "@orvado/core";
import type { Tier } from "@orvado/proto";

// The model catalog: public model ids (spec 2.2), their family, the tiers they
// offer and the channels that serve them, from the operator's models file.

const channelSchema = z.object({
  name: z.string().min(1),
  provider: z.enum(["sandbox"]),
  capacity: z.number().int().min(1).max(100_000),
});

const modelSchema = z.object({
  id: z.string().min(1),
  family: z.enum(["alpha", "beta"]),
  tiers: z.array(z.enum(TIER_NAMES)).min(1),
  channels: z.array(channelSchema).min(1),
});

const catalogFileSchema = z.object({ models: z.array(modelSchema).min(1) });

export type ChannelConfig = z.infer<typeof channelSchema>;

export interface CatalogModel {
  id: string;
  family: "alpha" | "beta";
  tiers: Tier[];
  channels: ChannelConfig[];
}

export type Catalog = Map<string, CatalogModel>;

export function loadCatalog(path: string): Catalog {
  const parsed = catalogFileSchema.safeParse(JSON.parse(readFileSync(path, "utf8")));
  if (!parsed.success) {
    throw new Error(`models file ${path}: ${parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`);
  }
  return new Map(
    parsed.data.models.map((model) => [
      model.id,
      { ...model, tiers: model.tiers.map((name) => tierFromName(name)!) },
    ]),
  );
}

/** The sandbox renders for every model in the embedded default; /v1/models says so. */
export const isSandboxOnly = (model: CatalogModel) => model.channels.every((channel) => channel.provider === "sandbox");
