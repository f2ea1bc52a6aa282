import { describe, expect, it } from "vitest";
import sharp from "sharp";
import { a1111Mask } from "./mask.ts";

describe("the A1111 inpainting mask", () => {
  it("turns OpenAI's transparent pixels (edit here) white and its opaque ones (keep) black", async () => {
    const pixels = Buffer.alloc(4 * 4 * 4, 0);
    for (let index = 0; index < 16; index += 1) pixels[index * 4 + 3] = index % 4 < 2 ? 0 : 255;
    const openAi = await sharp(pixels, { raw: { width: 4, height: 4, channels: 4 } }).png().toBuffer();
    const converted = await a1111Mask(openAi);
    expect((await sharp(converted).metadata()).channels).toBe(1);
    const data = await sharp(converted).extractChannel(0).raw().toBuffer();
    expect([...data.subarray(0, 4)]).toEqual([255, 255, 0, 0]);
  });
});
