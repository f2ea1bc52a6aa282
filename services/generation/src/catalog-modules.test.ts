import { describe, expect, it } from "vitest";
import { parseCatalog } from "./catalog.ts";
import { loadCatalogModules } from "./catalog-modules.ts";

// What generation loads at start for its catalog (catalog-modules.ts): each provider package its
// channels use and sharp for a sandbox channel, once each, and nothing for providers it does not use.

const catalog = parseCatalog({
  models: [
    {
      id: "alpha-2.5-flare",
      family: "alpha",
      tiers: ["1K"],
      channels: [
        { name: "compatible", provider: "openai-compatible", upstreamModel: "m", baseUrl: "http://127.0.0.1:1/v1", capacity: 2, priority: 1 },
        { name: "fal", provider: "fal", upstreamModel: "fal-ai/flux/dev", apiKeyEnv: "K", capacity: 1, priority: 2 },
      ],
    },
    { id: "beta", family: "beta", tiers: ["1K"], channels: [{ name: "sandbox", provider: "sandbox", capacity: 1 }] },
    { id: "beta-2.1", family: "beta", tiers: ["1K"], channels: [{ name: "other", provider: "openai-compatible", upstreamModel: "n", baseUrl: "http://127.0.0.1:2/v1", capacity: 1 }] },
  ],
});

describe("the catalog's modules, loaded at start", () => {
  it("loads each provider package the channels use once, and sharp for the sandbox; no other", async () => {
    const calls: string[] = [];
    const loaded = await loadCatalogModules(catalog, {
      sharp: async () => calls.push("sharp"),
      provider: async (name) => calls.push(name),
    });
    expect(loaded).toEqual(["fal", "openai-compatible", "sandbox"]);
    expect(calls.sort()).toEqual(["fal", "openai-compatible", "sharp"]);
  });

  it("loads the real modules: every provider of the catalog answers with its factory", async () => {
    expect(await loadCatalogModules(catalog)).toEqual(["fal", "openai-compatible", "sandbox"]);
  });

  it("fails the start when a module cannot be loaded", async () => {
    await expect(loadCatalogModules(catalog, { sharp: async () => undefined, provider: async () => Promise.reject(new Error("no such package")) })).rejects.toThrow("no such package");
  });
});
