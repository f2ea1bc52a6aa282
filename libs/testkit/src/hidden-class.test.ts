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

  // Node 20's V8 (the engine CI runs); later ones may build these objects differently.
  it.runIf(process.versions.node.startsWith("20."))("sees a leading spread followed by new fields give every object its own class, and the same fields written out not", () => {
    expect(sharesHiddenClass((index) => ({ ...ids(index), model: "m" }))).toBe(false);
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
