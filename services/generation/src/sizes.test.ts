import { describe, expect, it } from "vitest";
import { Tier } from "@orvado/proto";
import { parseSize, tierForSize } from "./sizes.ts";

const sizeOf = (text: string | undefined) => {
  const parsed = parseSize(text);
  if (!parsed.ok) throw new Error(parsed.message);
  return parsed.size;
};

describe("parseSize", () => {
  it("defaults to 1024x1024", () => {
    expect(sizeOf(undefined)).toEqual({ width: 1024, height: 1024, label: "1024x1024" });
  });
  it("gives squares for 1k, 2k, 4k and auto", () => {
    expect(sizeOf("1k")).toMatchObject({ width: 1024, height: 1024 });
    expect(sizeOf("2K")).toMatchObject({ width: 2048, height: 2048 });
    expect(sizeOf("4k")).toMatchObject({ width: 4096, height: 4096 });
    expect(sizeOf("auto")).toMatchObject({ width: 1024, height: 1024 });
  });
  it("keeps the aspect ratio of pixel sizes", () => {
    expect(sizeOf("1536x1024")).toMatchObject({ width: 1536, height: 1024 });
    expect(sizeOf("1920X1080")).toMatchObject({ width: 1920, height: 1080, label: "1920x1080" });
  });
  it("refuses malformed and out-of-range sizes", () => {
    for (const bad of ["0x0", "-1x5", "99999x1", "1e3x1e3", "1024", "1024x", "x1024", "big", "", "1024 x 1024", "4097x100", "63x64", "3k"]) {
      expect(parseSize(bad).ok, bad).toBe(false);
    }
  });
});

describe("tierForSize", () => {
  it("follows the longest side: under 1800 is 1K, 1800-2999 is 2K, 3000 and up is 4K", () => {
    expect(tierForSize({ width: 1799, height: 100 })).toBe(Tier.TIER_1K);
    expect(tierForSize({ width: 100, height: 1800 })).toBe(Tier.TIER_2K);
    expect(tierForSize({ width: 2999, height: 2999 })).toBe(Tier.TIER_2K);
    expect(tierForSize({ width: 3000, height: 64 })).toBe(Tier.TIER_4K);
    expect(tierForSize({ width: 1024, height: 1024 })).toBe(Tier.TIER_1K);
  });
  it("refuses the names of Object.prototype's members, in any case, as unknown sizes", () => {
    for (const name of ["constructor", "__proto__", "toString", "hasOwnProperty", "valueOf", "CONSTRUCTOR", "__PROTO__", "isPrototypeOf"]) {
      expect(parseSize(name), name).toMatchObject({ ok: false });
    }
  });
});
