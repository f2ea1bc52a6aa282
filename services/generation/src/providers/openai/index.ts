import { EDIT_IMAGE_COUNT_CEILING, loadedOnFirstUse } from "@orvado/core";
import type { ProviderDefinition } from "../definition.ts";
import { openAiStyleRefusal } from "../refusal-parts.ts";

export const openAi: ProviderDefinition = {
  name: "openai",
  loadFactory: loadedOnFirstUse(() => import("./adapter.ts").then((adapter) => adapter.openAiFactory)),
  defaultBaseUrl: "https://api.openai.com/v1",
  refusesWith4xxOnly: true,
  refusal: openAiStyleRefusal,
  // OpenAI's /images/edits takes 16 images and a mask.
  editSupport: () => ({ images: true, mask: true, maxImages: EDIT_IMAGE_COUNT_CEILING }),
};
