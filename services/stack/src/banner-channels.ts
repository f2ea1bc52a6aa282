import { GenerationService, type Model } from "@orvado/proto";
import { internalClient } from "@orvado/rpc";

// What the start banners (npm start, start:cluster) say of the models: each one with its aliases
// and the channels that serve it, in the order they are tried, from generation's own catalog.

/** The catalog as generation serves it (ListModels), over the given transport's address. */
export async function servedModels(generationUrls: string | string[], internalSecret: string): Promise<Model[]> {
  return (await internalClient(GenerationService, generationUrls, internalSecret).listModels({}, { timeoutMs: 15_000 })).models;
}

/** One line per model, under a heading that says whether any upstream is configured. */
export function describeChannels(models: readonly Model[]): string[] {
  const upstream = models.some((model) => !model.sandbox);
  const heading = upstream
    ? "Models and their channels (ORVADO_MODELS_FILE; tried in this order):"
    : "Models (all on the SANDBOX renderer: real PNGs, no upstream; set ORVADO_MODELS_FILE for real providers, docs/providers.md):";
  const width = Math.max(0, ...models.map((model) => model.id.length));
  return [
    heading,
    ...models.map((model) => {
      const aliases = model.aliases.length > 0 ? ` (also ${model.aliases.join(", ")})` : "";
      const channels = model.channels.map((channel) => (channel.provider === "sandbox" ? `${channel.name} (sandbox)` : `${channel.name} (${channel.provider})`));
      return `  ${model.id.padEnd(width)}  → ${channels.join(", ")}${aliases}`;
    }),
  ];
}
