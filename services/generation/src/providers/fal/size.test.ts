import { describe, expect, it } from "vitest";
import { falSize } from "./size.ts";

describe("fal size mapping", () => {
  it("keeps fal to multiples of 16 up to 2048 px", () => {
    expect(falSize({ width: 1536, height: 1024 })).toBe("1536x1024");
    expect(falSize({ width: 4096, height: 2304 })).toBe("2048x1152");
    expect(falSize({ width: 1000, height: 1000 })).toBe("1008x1008");
  });
});
