import { describe, expect, it } from "vitest";
import { CostStatus, Role, Tier } from "@orvado/proto";
import { isoTime, render, roleText, statusText, tierText, usdOrNull } from "./format.ts";

describe("format", () => {
  it("names tiers, statuses and roles the way the API spells them", () => {
    expect([Tier.TIER_1K, Tier.TIER_2K, Tier.TIER_4K].map(tierText)).toEqual(["1K", "2K", "4K"]);
    expect([CostStatus.PENDING, CostStatus.CHARGED, CostStatus.NOT_CHARGED].map(statusText)).toEqual([
      "pending",
      "charged",
      "not_charged",
    ]);
    expect([Role.USER, Role.ADMIN].map(roleText)).toEqual(["user", "admin"]);
  });

  it("shows an enum value it does not know by number instead of failing", () => {
    expect(tierText(9 as Tier)).toBe("tier_9");
    expect(statusText(7 as CostStatus)).toBe("status_7");
  });

  it("turns unix ms into ISO time, absent into null, and never throws on a huge value", () => {
    expect(isoTime(0n)).toBe("1970-01-01T00:00:00.000Z");
    expect(isoTime(undefined)).toBeNull();
    expect(isoTime(9_223_372_036_854_775_807n)).toBe("9223372036854775807");
  });

  it("keeps negative and absent amounts exact", () => {
    expect(usdOrNull(-40_000n)).toBe("-0.040000");
    expect(usdOrNull(undefined)).toBeNull();
  });

  it("renders one JSON object and a newline", () => {
    expect(render({ a: "1", b: null })).toBe('{\n  "a": "1",\n  "b": null\n}\n');
  });
});
