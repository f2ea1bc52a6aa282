import { EDIT_IMAGE_COUNT_CEILING, loadedOnFirstUse } from "@orvado/core";
import type { ProviderDefinition } from "../definition.ts";
import { openAiStyleRefusal } from "../refusal-parts.ts";

// No default base URL: a channel of this provider names its server (catalog.ts checks it).
export const openAiCompatible: ProviderDefinition = {
  name: "openai-compatible",
  loadFactory: loadedOnFirstUse(() => import("./adapter.ts").then((adapter) => adapter.openAiCompatibleFactory)),
  refusesWith4xxOnly: true,
  refusal: openAiStyleRefusal,
  // As OpenAI's /images/edits: 16 images and a mask.
  editSupport: () => ({ images: true, mask: true, maxImages: EDIT_IMAGE_COUNT_CEILING }),
};
