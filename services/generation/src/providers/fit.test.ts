import { describe, expect, it } from "vitest";
import sharp from "sharp";
import { fitToSize, pngSize } from "./fit.ts";

const solid = (width: number, height: number) => sharp({ create: { width, height, channels: 3, background: { r: 10, g: 200, b: 90 } } });

describe("fitToSize", () => {
  it("passes a PNG of exactly the asked size through, byte for byte", async () => {
    const png = await solid(64, 32).png().toBuffer();
    const fitted = await fitToSize(png, 64, 32);
    expect(fitted.resized).toBe(false);
    expect(fitted.delivered).toEqual({ width: 64, height: 32, format: "png" });
    expect(Buffer.compare(fitted.png, png)).toBe(0);
  });

  it("resizes a PNG of another size to cover the asked box", async () => {
    const fitted = await fitToSize(await solid(100, 100).png().toBuffer(), 64, 32);
    expect(fitted.resized).toBe(true);
    expect(fitted.delivered).toEqual({ width: 100, height: 100, format: "png" });
    const meta = await sharp(fitted.png).metadata();
    expect([meta.width, meta.height, meta.format]).toEqual([64, 32, "png"]);
  });

  it("turns a JPEG of the right size into a PNG", async () => {
    const fitted = await fitToSize(await solid(64, 32).jpeg().toBuffer(), 64, 32);
    expect(fitted.delivered.format).toBe("jpeg");
    expect((await sharp(fitted.png).metadata()).format).toBe("png");
  });

  it("refuses what is not an image, and a PNG cut short", async () => {
    await expect(fitToSize(Buffer.from("not an image at all, just text"), 64, 32)).rejects.toThrow();
    const png = await solid(64, 32).png().toBuffer();
    await expect(fitToSize(png.subarray(0, png.length - 20), 64, 32)).rejects.toThrow();
  });
});

describe("pngSize", () => {
  it("reads the size from the header of a whole PNG only", async () => {
    const png = await solid(7, 5).png().toBuffer();
    expect(pngSize(png)).toEqual({ width: 7, height: 5 });
    expect(pngSize(png.subarray(0, png.length - 1))).toBeNull();
    expect(pngSize(await solid(7, 5).jpeg().toBuffer())).toBeNull();
  });
});
