import { describe, expect, it } from "vitest";
import { openAiSize } from "./size.ts";

describe("OpenAI size mapping", () => {
  it("picks OpenAI's size closest in shape", () => {
    expect(openAiSize({ width: 1024, height: 1024 })).toBe("1024x1024");
    expect(openAiSize({ width: 1920, height: 1080 })).toBe("1536x1024");
    expect(openAiSize({ width: 1080, height: 1920 })).toBe("1024x1536");
    expect(openAiSize({ width: 4096, height: 4096 })).toBe("1024x1024");
  });
});
