import { describe, expect, it } from "vitest";
import { sharesHiddenClass } from "./hidden-class.ts";

// No transport: V8's own view of objects in this process.

const ids = (index: number) => ({ requestId: `r${index}`, accountId: "a", keyId: "k" });

describe("sharesHiddenClass", () => {
  it("tells objects of one shape from objects whose fields came in another order", () => {
    expect(sharesHiddenClass((index) => ({ requestId: `r${index}`, model: "m" }))).toBe(true);
    // make(-1) and make(-2) differ in the order their fields were added.
    expect(sharesHiddenClass((index) => (index % 2 ? { requestId: `r${index}`, model: "m" } : { model: "m", requestId: `r${index}` }))).toBe(false);
  });

  // Node 24's V8 (the runtime npm ci brings). Node 20's gave an object that begins with a spread
  // and then adds fields a class of its own per object; that is why some hot paths build such
  // objects with Object.assign or field by field (hidden-class.ts).
  it("sees a leading spread followed by new fields share one class, as the same fields written out do", () => {
    expect(sharesHiddenClass((index) => ({ ...ids(index), model: "m" }))).toBe(true);
    const written = (index: number) => {
      const from = ids(index);
      return { requestId: from.requestId, accountId: from.accountId, keyId: from.keyId, model: "m" };
    };
    expect(sharesHiddenClass(written)).toBe(true);
    expect(sharesHiddenClass((index) => ({ model: "m", ...ids(index) }))).toBe(true);
    // Replacing a field the spread object has keeps its class.
    expect(sharesHiddenClass((index) => ({ ...ids(index), keyId: "other" }))).toBe(true);
  });
});
