import { describe, expect, it } from "vitest";
import { sharesHiddenClass } from "./hidden-class.ts";

// No transport: V8's own view of objects in this process.

const ids = (index: number) => ({ requestId: `r${index}`, accountId: "a", keyId: "k" });

describe("sharesHiddenClass", () => {
  it("tells a leading spread followed by new properties (hidden classes per object) from the same fields written out", () => {
    expect(sharesHiddenClass((index) => ({ ...ids(index), model: "m" }))).toBe(false);
    const written = (index: number) => {
      const from = ids(index);
      return { requestId: from.requestId, accountId: from.accountId, keyId: from.keyId, model: "m" };
    };
    expect(sharesHiddenClass(written)).toBe(true);
    expect(sharesHiddenClass((index) => ({ model: "m", ...ids(index) }))).toBe(true);
    // Replacing a property the spread object has keeps its class.
    expect(sharesHiddenClass((index) => ({ ...ids(index), keyId: "other" }))).toBe(true);
  });
});
