import { describe, expect, it } from "vitest";
import sharp from "sharp";
import { renderSandboxPng } from "./sandbox/render.ts";
import { encodeImage, extensionFor } from "./output-format.ts";

// output_format and output_compression (docs/api.md): the PNG a provider's answer was
// fitted to, encoded with sharp (in process, no transport).

describe("encodeImage", () => {
  it("leaves png as it is, and encodes webp and jpeg of the same size", async () => {
    const png = await renderSandboxPng("a lake", 320, 200);
    expect(await encodeImage(png, { format: "png", compression: undefined })).toEqual({ bytes: png, contentType: "image/png" });
    for (const [format, contentType] of [["webp", "image/webp"], ["jpeg", "image/jpeg"]] as const) {
      const encoded = await encodeImage(png, { format, compression: undefined });
      expect(encoded.contentType).toBe(contentType);
      const meta = await sharp(encoded.bytes).metadata();
      expect([meta.format, meta.width, meta.height]).toEqual([format, 320, 200]);
    }
  });

  it("keeps the sandbox's EXIF mark through the conversion", async () => {
    const png = await renderSandboxPng("a lake", 128, 128);
    const webp = await encodeImage(png, { format: "webp", compression: 80 });
    expect((await sharp(webp.bytes).metadata()).exif?.toString("latin1")).toContain("Orvado sandbox");
  });

  it("makes a smaller file at a lower compression value (the encoder's quality)", async () => {
    const png = await renderSandboxPng("a busy street", 512, 512);
    const best = await encodeImage(png, { format: "jpeg", compression: 100 });
    const small = await encodeImage(png, { format: "jpeg", compression: 5 });
    expect(small.bytes.length).toBeLessThan(best.bytes.length);
  });

  it("turns transparent pixels white in jpeg, which has no alpha", async () => {
    const clear = await sharp({ create: { width: 8, height: 8, channels: 4, background: { r: 0, g: 0, b: 0, alpha: 0 } } }).png().toBuffer();
    const jpeg = await encodeImage(clear, { format: "jpeg", compression: 100 });
    const { data } = await sharp(jpeg.bytes).raw().toBuffer({ resolveWithObject: true });
    expect(Math.min(...data)).toBeGreaterThan(245);
  });

  it("names a link's extension by the stored content type", () => {
    expect(["image/png", "image/jpeg", "image/webp", "text/plain"].map(extensionFor)).toEqual(["png", "jpeg", "webp", "png"]);
  });
});
