import { describe, expect, it } from "vitest";
import { parseCatalog } from "./catalog.ts";
import { loadCatalogModules } from "./catalog-modules.ts";
import { twoChannelCatalog } from "./test-support.ts";

// What generation loads at start for its catalog (catalog-modules.ts): each provider package its
// channels use and sharp for a sandbox channel, once each, and nothing for providers it does not use.

const catalog = twoChannelCatalog();

function counting() {
  const calls: string[] = [];
  return { calls, loaders: { sharp: async () => calls.push("sharp"), provider: async (name: string) => calls.push(name) } };
}

describe("the catalog's modules, loaded at start", () => {
  it("loads each provider package the channels use, and sharp for the sandbox; no other", async () => {
    const { calls, loaders } = counting();
    expect(await loadCatalogModules(catalog, loaders)).toEqual(["openai", "openai-compatible", "sandbox"]);
    expect(calls.sort()).toEqual(["openai", "openai-compatible", "sharp"]);
  });

  it("loads a provider used by several channels once, and no sharp without a sandbox channel", async () => {
    const channel = (name: string) => ({ name, provider: "openai-compatible", upstreamModel: "m", baseUrl: `http://127.0.0.1:1/${name}`, capacity: 1 });
    const { calls, loaders } = counting();
    await loadCatalogModules(parseCatalog({ models: [{ id: "beta", family: "beta", tiers: ["1K"], channels: [channel("a"), channel("b")] }] }), loaders);
    expect(calls).toEqual(["openai-compatible"]);
  });

  it("loads the real modules", async () => {
    expect(await loadCatalogModules(catalog)).toEqual(["openai", "openai-compatible", "sandbox"]);
  });

  it("fails the start when a module cannot be loaded", async () => {
    await expect(loadCatalogModules(catalog, { sharp: async () => undefined, provider: async () => Promise.reject(new Error("no such package")) })).rejects.toThrow("no such package");
  });
});
