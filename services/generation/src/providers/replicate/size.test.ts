import { describe, expect, it } from "vitest";
import { replicateSize } from "./size.ts";

describe("Replicate size mapping", () => {
  it("gives Replicate the closest ratio from its own list", () => {
    expect(replicateSize({ width: 1536, height: 1024 })).toEqual({ aspectRatio: "3:2" });
    expect(replicateSize({ width: 1080, height: 2520 })).toEqual({ aspectRatio: "9:21" });
  });
});
