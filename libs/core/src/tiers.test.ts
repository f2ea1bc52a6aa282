import { describe, expect, it } from "vitest";
import { Tier } from "@orvado/proto";
import { tierFromName, tierName } from "./tiers.ts";

describe("tierFromName", () => {
  it("reads 1K, 2K and 4K in any case", () => {
    expect([tierFromName("1k"), tierFromName("2K"), tierFromName("4k")]).toEqual([Tier.TIER_1K, Tier.TIER_2K, Tier.TIER_4K]);
    expect(tierName(Tier.TIER_4K)).toBe("4K");
  });
  it("finds nothing for Object.prototype's names", () => {
    for (const name of ["constructor", "__proto__", "toString", "hasOwnProperty", "valueOf", "CONSTRUCTOR", "__PROTO__"]) {
      expect(tierFromName(name), name).toBeNull();
    }
  });
});
