import { describe, expect, it } from "vitest";
import { microsToUsd, usdToMicros } from "./money.ts";

describe("usdToMicros", () => {
  it("parses whole and fractional dollars exactly", () => {
    expect(usdToMicros("12.50")).toBe(12_500_000n);
    expect(usdToMicros("0.04")).toBe(40_000n);
    expect(usdToMicros("5")).toBe(5_000_000n);
    expect(usdToMicros("0.000001")).toBe(1n);
  });
  it("refuses what is not a plain non-negative amount", () => {
    for (const bad of ["", "-1", "1.0000001", "1e3", "abc", "1,5", "0x10", ".5"]) {
      expect(usdToMicros(bad)).toBeNull();
    }
  });
});

describe("microsToUsd", () => {
  it("always prints six places", () => {
    expect(microsToUsd(40_000n)).toBe("0.040000");
    expect(microsToUsd(12_500_000n)).toBe("12.500000");
    expect(microsToUsd(-1n)).toBe("-0.000001");
    expect(microsToUsd(0n)).toBe("0.000000");
  });
});
