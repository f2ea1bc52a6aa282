import { Tier } from "@orvado/proto";

// The three size tiers of spec 2.3, by the names people read ("1K", "2K", "4K").
export const TIER_NAMES = ["1K", "2K", "4K"] as const;
export type TierName = (typeof TIER_NAMES)[number];

const BY_NAME: Record<TierName, Tier> = { "1K": Tier.TIER_1K, "2K": Tier.TIER_2K, "4K": Tier.TIER_4K };

export function tierFromName(name: string): Tier | null {
  return (BY_NAME as Record<string, Tier>)[name.toUpperCase()] ?? null;
}

export function tierName(tier: Tier): TierName {
  const name = TIER_NAMES.find((candidate) => BY_NAME[candidate] === tier);
  if (!name) throw new Error(`no tier ${tier}`);
  return name;
}
