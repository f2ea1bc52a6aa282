import { describe, expect, it } from "vitest";
import {
  blackForestLabsSize,
  byteDanceSize,
  exactSize,
  falSize,
  geminiSize,
  imagenSize,
  openAiSize,
  replicateSize,
  resolutionFor,
} from "./size-mapping.ts";

const ratio = (size: string) => {
  const [w, h] = size.split("x").map(Number);
  return w! / h!;
};

describe("size mapping", () => {
  it("names the tier the way upstreams do: 1K under 1800 px, 2K to 2999, 4K above", () => {
    expect([resolutionFor({ width: 1024, height: 1024 }), resolutionFor({ width: 1799, height: 10 }), resolutionFor({ width: 1800, height: 1800 }), resolutionFor({ width: 640, height: 3000 })]).toEqual([
      "1K",
      "1K",
      "2K",
      "4K",
    ]);
  });

  it("picks OpenAI's size closest in shape", () => {
    expect(openAiSize({ width: 1024, height: 1024 })).toBe("1024x1024");
    expect(openAiSize({ width: 1920, height: 1080 })).toBe("1536x1024");
    expect(openAiSize({ width: 1080, height: 1920 })).toBe("1024x1536");
    expect(openAiSize({ width: 4096, height: 4096 })).toBe("1024x1024");
  });

  it("gives Gemini the closest aspect ratio and the tier's image size", () => {
    expect(geminiSize({ width: 1024, height: 1024 })).toEqual({ aspectRatio: "1:1", imageSize: "1K" });
    expect(geminiSize({ width: 3840, height: 2160 })).toEqual({ aspectRatio: "16:9", imageSize: "4K" });
    expect(geminiSize({ width: 2048, height: 1365 })).toEqual({ aspectRatio: "3:2", imageSize: "2K" });
    expect(geminiSize({ width: 2520, height: 1080 })).toEqual({ aspectRatio: "21:9", imageSize: "2K" });
    expect(geminiSize({ width: 1080, height: 1350 })).toEqual({ aspectRatio: "4:5", imageSize: "1K" });
  });

  it("gives Imagen and Replicate the closest ratio from their own lists", () => {
    expect(imagenSize({ width: 1536, height: 1024 })).toEqual({ aspectRatio: "4:3" });
    expect(imagenSize({ width: 1024, height: 1792 })).toEqual({ aspectRatio: "9:16" });
    expect(replicateSize({ width: 1536, height: 1024 })).toEqual({ aspectRatio: "3:2" });
    expect(replicateSize({ width: 1080, height: 2520 })).toEqual({ aspectRatio: "9:21" });
  });

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

  it("keeps Black Forest Labs to multiples of 32 within 256–1440 px", () => {
    expect(blackForestLabsSize({ width: 1024, height: 1024 })).toBe("1024x1024");
    expect(blackForestLabsSize({ width: 4096, height: 4096 })).toBe("1440x1440");
    const wide = blackForestLabsSize({ width: 3840, height: 2160 });
    expect(wide).toBe("1440x800");
    expect(blackForestLabsSize({ width: 100, height: 100 })).toBe("256x256");
  });

  it("keeps fal to multiples of 16 up to 2048 px", () => {
    expect(falSize({ width: 1536, height: 1024 })).toBe("1536x1024");
    expect(falSize({ width: 4096, height: 2304 })).toBe("2048x1152");
    expect(falSize({ width: 1000, height: 1000 })).toBe("1008x1008");
  });

  it("asks an OpenAI-compatible server for exactly the requested size", () => {
    expect(exactSize({ width: 1234, height: 567 })).toBe("1234x567");
  });
});
