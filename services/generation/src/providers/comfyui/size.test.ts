import { describe, expect, it } from "vitest";
import { comfyuiSize } from "./size.ts";

describe("ComfyUI size mapping", () => {
  it("sends multiples of 8 as they are and rounds other sides up", () => {
    expect(comfyuiSize({ width: 1024, height: 768 })).toEqual({ width: 1024, height: 768 });
    expect(comfyuiSize({ width: 1001, height: 250 })).toEqual({ width: 1008, height: 256 });
  });
});
