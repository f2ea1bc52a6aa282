import { Tier } from "@orvado/proto";

// The three size tiers of docs/api.md#sizes-and-tiers, by the names people read ("1K", "2K", "4K").
export const TIER_NAMES = ["1K", "2K", "4K"] as const;
export type TierName = (typeof TIER_NAMES)[number];

// A Map, so that a name such as "constructor" finds nothing on Object.prototype.
const BY_NAME = new Map<string, Tier>([
  ["1K", Tier.TIER_1K],
  ["2K", Tier.TIER_2K],
  ["4K", Tier.TIER_4K],
]);

export function tierFromName(name: string): Tier | null {
  return BY_NAME.get(name.toUpperCase()) ?? null;
}

export function tierName(tier: Tier): TierName {
  const name = TIER_NAMES.find((candidate) => BY_NAME.get(candidate) === tier);
  if (!name) throw new Error(`no tier ${tier}`);
  return name;
}
