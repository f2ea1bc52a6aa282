import type { ProviderDefinition } from "../definition.ts";
import { openAiStyleRefusal } from "../refusal-parts.ts";
import { byteDanceFactory } from "./adapter.ts";

export const byteDance: ProviderDefinition = {
  name: "bytedance",
  factory: byteDanceFactory,
  defaultBaseUrl: "https://ark.ap-southeast.bytepluses.com/api/v3",
  refusesWith4xxOnly: true,
  refusal: openAiStyleRefusal,
  // Up to 10 input images; the package refuses a mask.
  editSupport: () => ({ images: true, mask: false, maxImages: 10 }),
};
