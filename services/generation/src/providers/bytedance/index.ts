import { loadedOnFirstUse } from "@orvado/core";
import type { ProviderDefinition } from "../definition.ts";
import { openAiStyleRefusal } from "../refusal-parts.ts";

export const byteDance: ProviderDefinition = {
  name: "bytedance",
  loadFactory: loadedOnFirstUse(() => import("./adapter.ts").then((adapter) => adapter.byteDanceFactory)),
  defaultBaseUrl: "https://ark.ap-southeast.bytepluses.com/api/v3",
  refusesWith4xxOnly: true,
  refusal: openAiStyleRefusal,
  // Up to 10 input images; the package refuses a mask.
  editSupport: () => ({ images: true, mask: false, maxImages: 10 }),
};
