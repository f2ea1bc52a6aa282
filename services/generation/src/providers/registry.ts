import type { UpstreamProvider } from "../catalog.ts";
import type { ProviderDefinition } from "./definition.ts";
import { openAi } from "./openai/index.ts";
import { openAiCompatible } from "./openai-compatible/index.ts";
import { google } from "./google/index.ts";
import { byteDance } from "./bytedance/index.ts";
import { blackForestLabs } from "./black-forest-labs/index.ts";
import { fal } from "./fal/index.ts";
import { replicate } from "./replicate/index.ts";
import { automatic1111 } from "./automatic1111/index.ts";
import { comfyui } from "./comfyui/index.ts";

// Every provider the AI SDK path serves, by the catalog's provider name. A new provider is
// a folder (providers/<name>/: adapter, size mapping, refusal rules, edit support, tests)
// and one line here. The sandbox is not here: it draws in-process (../sandbox/).

type SdkProvider = Exclude<UpstreamProvider, "sandbox">;

const ALL: readonly ProviderDefinition[] = [openAi, openAiCompatible, google, byteDance, blackForestLabs, fal, replicate, automatic1111, comfyui];

export const PROVIDERS: ReadonlyMap<SdkProvider, ProviderDefinition> = new Map(ALL.map((definition) => [definition.name, definition]));

/** The definition of a provider the catalog names; the sandbox has none. */
export function providerDefinition(name: UpstreamProvider): ProviderDefinition | undefined {
  return PROVIDERS.get(name as SdkProvider);
}
