import { describe, expect, it } from "vitest";
import { blackForestLabsRefusal } from "./refusal.ts";

describe("Black Forest Labs refusals", () => {
  it("reads a moderated status while polling", () => {
    expect(blackForestLabsRefusal({ status: "Request Moderated" })).toBe("Request Moderated");
    expect(blackForestLabsRefusal({ status: "Content Moderated" })).toBe("Content Moderated");
    expect(blackForestLabsRefusal({ status: "Pending" })).toBeUndefined();
  });
});
