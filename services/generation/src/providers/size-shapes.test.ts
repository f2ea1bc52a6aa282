import { describe, expect, it } from "vitest";
import { boundedSize, resolutionFor } from "./size-shapes.ts";

// Each provider's own mapping is tested beside it (providers/<name>/size.test.ts).

describe("size shapes", () => {
  it("names the tier the way upstreams do: 1K under 1800 px, 2K to 2999, 4K above", () => {
    expect([resolutionFor({ width: 1024, height: 1024 }), resolutionFor({ width: 1799, height: 10 }), resolutionFor({ width: 1800, height: 1800 }), resolutionFor({ width: 640, height: 3000 })]).toEqual([
      "1K",
      "1K",
      "2K",
      "4K",
    ]);
  });

  it("scales a size into pixel bounds keeping its shape, sides rounded to the multiple", () => {
    expect(boundedSize({ width: 4000, height: 2000 }, { multiple: 10, minSide: 100, maxSide: 1000 })).toBe("1000x500");
    expect(boundedSize({ width: 50, height: 50 }, { multiple: 10, minSide: 100, maxSide: 1000 })).toBe("100x100");
  });
});
