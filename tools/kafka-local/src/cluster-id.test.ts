import { describe, expect, it } from "vitest";
import { newClusterId } from "./cluster-id.ts";

// The KRaft store's cluster id as `kafka-storage format -t <id>` takes it (no broker needed).

describe("newClusterId", () => {
  it("is 22 base64url characters that never start with '-' (the format tool would read an option)", () => {
    // Without the redraw, about 1 in 64 ids start with "-": 10,000 draws all but surely meet one.
    const ids = Array.from({ length: 10_000 }, newClusterId);
    expect(ids.every((id) => /^[A-Za-z0-9_][A-Za-z0-9_-]{21}$/.test(id))).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
  });
});
