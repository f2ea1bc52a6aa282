import sharp from "sharp";
import { describe, expect, it } from "vitest";
import { renderSandboxPng } from "./render.ts";

async function meanColour(png: Buffer): Promise<number[]> {
  const { channels } = await sharp(png).stats();
  return channels.slice(0, 3).map((channel) => channel.mean);
}

describe("renderSandboxPng", () => {
  it.each([
    [1024, 1024],
    [1536, 1024],
    [1, 1],
    [4096, 4096],
    [4096, 2304],
  ])("renders a PNG of exactly %ix%i", async (width, height) => {
    const png = await renderSandboxPng("a lighthouse at dusk", width, height);
    const metadata = await sharp(png).metadata();
    expect(metadata.format).toBe("png");
    expect([metadata.width, metadata.height]).toEqual([width, height]);
  });

  it("labels the file as a sandbox image in its metadata", async () => {
    const png = await renderSandboxPng("a lighthouse at dusk", 64, 64);
    const { exif } = await sharp(png).metadata();
    expect(exif?.toString("latin1")).toContain("Orvado sandbox");
  });

  it("draws the yellow and black checker band along the bottom edge", async () => {
    const { data, info } = await sharp(await renderSandboxPng("any prompt at all", 256, 256))
      .raw()
      .toBuffer({ resolveWithObject: true });
    const bottomRow = data.subarray((info.height - 1) * info.width * info.channels);
    let yellow = 0;
    let black = 0;
    for (let offset = 0; offset < bottomRow.length; offset += info.channels) {
      const [r, g, b] = [bottomRow[offset] ?? 0, bottomRow[offset + 1] ?? 0, bottomRow[offset + 2] ?? 0];
      if (r > 200 && g > 160 && b < 80) yellow++;
      if (r < 50 && g < 50 && b < 50) black++;
    }
    expect(yellow).toBeGreaterThan(info.width / 4);
    expect(black).toBeGreaterThan(info.width / 4);
  });

  it("is byte-identical for the same prompt and size", async () => {
    const first = await renderSandboxPng("a red fox in snow", 1536, 1024);
    const second = await renderSandboxPng("a red fox in snow", 1536, 1024);
    expect(first.equals(second)).toBe(true);
  });

  it("looks different for different prompts", async () => {
    const fox = await renderSandboxPng("a red fox in snow", 512, 512);
    const boat = await renderSandboxPng("a paper boat on a pond", 512, 512);
    expect(fox.equals(boat)).toBe(false);

    const [foxMean, boatMean] = [await meanColour(fox), await meanColour(boat)];
    const distance = foxMean.reduce((sum, value, i) => sum + Math.abs(value - (boatMean[i] ?? 0)), 0);
    // Summed over R, G and B on a 0..255 scale: an average shift of 15 per channel is plain to see.
    expect(distance).toBeGreaterThan(45);
  });

  it("refuses sizes outside 1..4096 or not whole pixels", async () => {
    for (const [width, height] of [[0, 10], [10, 4097], [10.5, 10], [Number.NaN, 10]] as const) {
      await expect(renderSandboxPng("x", width, height)).rejects.toThrow(RangeError);
    }
  });
});
