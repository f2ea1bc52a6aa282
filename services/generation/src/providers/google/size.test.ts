import { describe, expect, it } from "vitest";
import { geminiSize } from "./size.ts";

describe("Google size mapping", () => {
  it("gives Gemini the closest aspect ratio and the tier's image size", () => {
    expect(geminiSize({ width: 1024, height: 1024 })).toEqual({ aspectRatio: "1:1", imageSize: "1K" });
    expect(geminiSize({ width: 3840, height: 2160 })).toEqual({ aspectRatio: "16:9", imageSize: "4K" });
    expect(geminiSize({ width: 2048, height: 1365 })).toEqual({ aspectRatio: "3:2", imageSize: "2K" });
    expect(geminiSize({ width: 2520, height: 1080 })).toEqual({ aspectRatio: "21:9", imageSize: "2K" });
    expect(geminiSize({ width: 1080, height: 1350 })).toEqual({ aspectRatio: "4:5", imageSize: "1K" });
  });
});
