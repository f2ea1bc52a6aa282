import { describe, expect, it } from "vitest";
import { parseCatalog } from "./catalog.ts";
import { allowlistAdmits, findModel, nameClashes } from "./aliases.ts";

// The alias rules on a parsed models file (no transport: pure functions; the whole path, with the
// openai SDK over HTTP, is services/stack/src/model-aliases.test.ts).

const sandbox = [{ name: "s", provider: "sandbox", capacity: 1 }];
const catalog = parseCatalog({
  models: [
    { id: "alpha-2.5-flare", aliases: ["gpt-image-1", "dall-e-3"], family: "alpha", tiers: ["1K"], channels: sandbox },
    { id: "beta", family: "beta", tiers: ["1K"], channels: sandbox },
  ],
});

describe("model aliases", () => {
  it("finds a model by its id or an alias, and nothing by another name", () => {
    expect(findModel(catalog, "gpt-image-1")?.id).toBe("alpha-2.5-flare");
    expect(findModel(catalog, "alpha-2.5-flare")?.id).toBe("alpha-2.5-flare");
    expect(findModel(catalog, "beta")?.aliases).toEqual([]);
    for (const name of ["gpt-image-2", "constructor", "__proto__", ""]) expect(findModel(catalog, name)).toBeUndefined();
  });

  it("admits a model through an allowlist naming it by id or alias; an empty list admits every model", () => {
    const flare = catalog.get("alpha-2.5-flare")!;
    expect(allowlistAdmits(catalog, ["dall-e-3"], flare)).toBe(true);
    expect(allowlistAdmits(catalog, ["alpha-2.5-flare"], flare)).toBe(true);
    expect(allowlistAdmits(catalog, ["beta", "unknown"], flare)).toBe(false);
    expect(allowlistAdmits(catalog, [], flare)).toBe(true);
  });

  it("names both sides of every clash: an alias equal to an id, to another alias, or given twice", () => {
    expect(nameClashes([{ id: "a", aliases: ["x", "b"] }, { id: "b", aliases: ["x"] }, { id: "c", aliases: ["c"] }])).toEqual([
      'alias "b" of model "a" clashes with model id "b": a name may run only one model',
      'alias "x" of model "b" clashes with alias "x" of model "a": a name may run only one model',
      'alias "c" of model "c" clashes with model id "c": a name may run only one model',
    ]);
    expect(() => parseCatalog({ models: [{ id: "a", aliases: ["a"], family: "beta", tiers: ["1K"], channels: sandbox }] })).toThrow(/alias "a" of model "a" clashes with model id "a"/);
    expect(nameClashes([{ id: "a" }, { id: "a" }])).toEqual(['model id "a" clashes with model id "a": a name may run only one model']);
  });
});
