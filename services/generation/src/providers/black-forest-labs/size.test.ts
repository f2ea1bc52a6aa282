import { describe, expect, it } from "vitest";
import { blackForestLabsSize } from "./size.ts";

describe("Black Forest Labs size mapping", () => {
  it("keeps Black Forest Labs to multiples of 32 within 256–1440 px", () => {
    expect(blackForestLabsSize({ width: 1024, height: 1024 })).toBe("1024x1024");
    expect(blackForestLabsSize({ width: 4096, height: 4096 })).toBe("1440x1440");
    const wide = blackForestLabsSize({ width: 3840, height: 2160 });
    expect(wide).toBe("1440x800");
    expect(blackForestLabsSize({ width: 100, height: 100 })).toBe("256x256");
  });
});
