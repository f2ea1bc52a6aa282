import { describe, expect, it } from "vitest";
import { byteDanceSize } from "./size.ts";

const ratio = (size: string) => {
  const [w, h] = size.split("x").map(Number);
  return w! / h!;
};

describe("ByteDance size mapping", () => {
  it("keeps ByteDance within its pixel-area bounds, keeping the shape", () => {
    expect(byteDanceSize({ width: 2048, height: 2048 })).toBe("2048x2048");
    const small = byteDanceSize({ width: 512, height: 512 });
    expect(small).toBe("960x960");
    expect(byteDanceSize({ width: 1600, height: 900 })).toBe("1600x904");
    const narrow = byteDanceSize({ width: 450, height: 800 });
    expect(ratio(narrow)).toBeCloseTo(9 / 16, 2);
    const [w, h] = narrow.split("x").map(Number);
    expect(w! * h!).toBeGreaterThanOrEqual(1280 * 720 * 0.99);
    expect(byteDanceSize({ width: 4096, height: 4096 })).toBe("4096x4096");
  });
});
