import { describe, expect, it } from "vitest";
import { fileURLToPath } from "node:url";
import { Tier } from "@orvado/proto";
import { loadCatalog, parseCatalog, resolveChannelKeys } from "./catalog.ts";

// The models file: zod-validated, channels in priority order, keys only by variable name.

const file = (channels: unknown[], extra: Record<string, unknown> = {}) => ({
  models: [{ id: "alpha-2.5-flare", family: "alpha", tiers: ["1K", "2K"], channels, ...extra }],
});

describe("the models file", () => {
  it("loads the embedded sandbox default and the real-provider example", () => {
    const sandbox = loadCatalog(fileURLToPath(new URL("../../../config/models.json", import.meta.url)));
    expect([...sandbox.keys()]).toEqual(["alpha-2.5-flare", "alpha-2.5-sunburst", "beta-pro", "beta-2.1", "beta", "beta-2-lite"]);
    const example = loadCatalog(fileURLToPath(new URL("../../../config/models.example.json", import.meta.url)));
    expect([...example.keys()].sort()).toEqual([...sandbox.keys()].sort());
    const providers = new Set([...example.values()].flatMap((model) => model.channels.map((channel) => channel.provider)));
    expect([...providers].sort()).toEqual(["black-forest-labs", "bytedance", "comfyui", "fal", "google", "openai", "openai-compatible", "replicate"]);
  });

  it("says per model whether it edits: the alpha models in the embedded default, none unless set", () => {
    const sandbox = loadCatalog(fileURLToPath(new URL("../../../config/models.json", import.meta.url)));
    expect([...sandbox.values()].filter((model) => model.edits).map((model) => model.id)).toEqual(["alpha-2.5-flare", "alpha-2.5-sunburst"]);
    expect(parseCatalog(file([{ name: "s", provider: "sandbox", capacity: 1 }])).get("alpha-2.5-flare")!.edits).toBe(false);
    const gemini = { name: "gemini", provider: "google", upstreamModel: "gemini-2.5-flash-image", apiKeyEnv: "K", capacity: 1 };
    expect(parseCatalog(file([gemini], { edits: true })).get("alpha-2.5-flare")!.edits).toBe(true);
    expect(() => parseCatalog(file([gemini], { edits: "yes" }))).toThrow(/edits/);
  });

  it("refuses a Google channel of an Imagen model: Google shut that API down", () => {
    const imagen = { name: "imagen", provider: "google", upstreamModel: "imagen-4.0-generate-001", apiKeyEnv: "K", capacity: 1 };
    expect(() => parseCatalog(file([imagen]))).toThrow(/channel "imagen": Google serves Gemini image models only/);
  });

  it("orders channels by priority, then file order, and defaults their tiers to the model's", () => {
    const catalog = parseCatalog(
      file([
        { name: "b", provider: "sandbox", capacity: 1, priority: 5 },
        { name: "a", provider: "sandbox", capacity: 1, priority: 1 },
        { name: "c", provider: "sandbox", capacity: 1, priority: 5, tiers: ["1K"] },
      ]),
    );
    const channels = catalog.get("alpha-2.5-flare")!.channels;
    expect(channels.map((channel) => channel.name)).toEqual(["a", "b", "c"]);
    expect(channels[0]!.tiers).toEqual([Tier.TIER_1K, Tier.TIER_2K]);
    expect(channels[2]!.tiers).toEqual([Tier.TIER_1K]);
  });

  it("refuses bad channels with a message naming the channel and the problem", () => {
    const cases: Array<[unknown[], RegExp]> = [
      [[{ name: "o", provider: "openai", capacity: 1, apiKeyEnv: "K" }], /channel "o": upstreamModel is required/],
      [[{ name: "o", provider: "openai", upstreamModel: "gpt-image-1", capacity: 1 }], /channel "o": apiKeyEnv is required/],
      [[{ name: "x", provider: "openai-compatible", upstreamModel: "m", capacity: 1 }], /channel "x": baseUrl is required/],
      [[{ name: "o", provider: "openai", upstreamModel: "m", apiKeyEnv: "K", capacity: 1, tiers: ["4K"] }], /tier 4K is not one of the model's tiers/],
      [[{ name: "o", provider: "openai", upstreamModel: "m", apiKey: "sk-live-in-the-file", capacity: 1 }], /apiKey/],
      [[{ name: "o", provider: "midjourney", capacity: 1 }], /provider/],
      [[{ name: "s", provider: "sandbox", capacity: 1 }, { name: "s", provider: "sandbox", capacity: 1 }], /used twice/],
    ];
    for (const [channels, message] of cases) expect(() => parseCatalog(file(channels)), message.source).toThrow(message);
  });

  it("takes an automatic1111 channel with its server and settings, without a model or key, and refuses its settings elsewhere", () => {
    const gpu = { name: "gpu", provider: "automatic1111", baseUrl: "http://gpu-box:7860", capacity: 1, steps: 30, sampler: "DPM++ 2M", negativePrompt: "blurry" };
    expect(parseCatalog(file([gpu])).get("alpha-2.5-flare")!.channels[0]).toMatchObject({ provider: "automatic1111", steps: 30, sampler: "DPM++ 2M", negativePrompt: "blurry" });
    const cases: Array<[unknown, RegExp]> = [
      [{ ...gpu, baseUrl: undefined }, /channel "gpu": baseUrl is required for automatic1111/],
      [{ ...gpu, steps: 0 }, /steps/],
      [{ ...gpu, steps: 2.5 }, /steps/],
      [{ ...gpu, sampler: "" }, /sampler/],
      [{ name: "o", provider: "openai", upstreamModel: "m", apiKeyEnv: "K", capacity: 1, steps: 20 }, /channel "o": steps is an automatic1111 setting/],
    ];
    for (const [channel, message] of cases) expect(() => parseCatalog(file([channel])), message.source).toThrow(message);
  });

  it("stops the service at start when a channel's key variable is missing, naming channel and variable but no value", () => {
    const catalog = parseCatalog(file([{ name: "openai-main", provider: "openai", upstreamModel: "gpt-image-1", apiKeyEnv: "OPENAI_API_KEY", capacity: 1 }]));
    expect(() => resolveChannelKeys(catalog, () => undefined)).toThrow(/channel "openai-main" of model "alpha-2.5-flare" needs its API key in the environment variable OPENAI_API_KEY/);
    expect(() => resolveChannelKeys(catalog, () => "  ")).toThrow(/OPENAI_API_KEY/);
    const keys = resolveChannelKeys(catalog, (name) => (name === "OPENAI_API_KEY" ? "sk-secret" : undefined));
    expect(keys.get("alpha-2.5-flare/openai-main")).toBe("sk-secret");
  });
});
