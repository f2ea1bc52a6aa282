import { EDIT_IMAGE_COUNT_CEILING } from "@orvado/core";
import type { ProviderDefinition } from "../definition.ts";
import { openAiStyleRefusal } from "../refusal-parts.ts";
import { openAiFactory } from "./adapter.ts";

export const openAi: ProviderDefinition = {
  name: "openai",
  factory: openAiFactory,
  defaultBaseUrl: "https://api.openai.com/v1",
  refusesWith4xxOnly: true,
  refusal: openAiStyleRefusal,
  // OpenAI's /images/edits takes 16 images and a mask.
  editSupport: () => ({ images: true, mask: true, maxImages: EDIT_IMAGE_COUNT_CEILING }),
};
