import { describe, expect, it } from "vitest";
import { exactSize } from "./size.ts";

describe("OpenAI-compatible size mapping", () => {
  it("asks an OpenAI-compatible server for exactly the requested size", () => {
    expect(exactSize({ width: 1234, height: 567 })).toBe("1234x567");
  });
});
