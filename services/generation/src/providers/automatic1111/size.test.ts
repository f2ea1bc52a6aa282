import { describe, expect, it } from "vitest";
import { automatic1111Size, sizeNumbers } from "./size.ts";

describe("AUTOMATIC1111 size mapping", () => {
  it("asks for exactly the requested size in multiples of 8, the nearest otherwise", () => {
    expect(automatic1111Size({ width: 1536, height: 1024 })).toBe("1536x1024");
    expect(automatic1111Size({ width: 1000, height: 750 })).toBe("1000x752");
    expect(sizeNumbers("640x384", { width: 1, height: 1 })).toEqual({ width: 640, height: 384 });
    expect(sizeNumbers(undefined, { width: 512, height: 512 })).toEqual({ width: 512, height: 512 });
  });
});
