import { EDIT_IMAGE_COUNT_CEILING } from "@orvado/core";
import type { ProviderDefinition } from "../definition.ts";
import { googleFactory, isGeminiModel } from "./adapter.ts";
import { googleRefusal } from "./refusal.ts";

export const google: ProviderDefinition = {
  name: "google",
  factory: googleFactory,
  defaultBaseUrl: "https://generativelanguage.googleapis.com/v1beta",
  refusesWith4xxOnly: false,
  refusal: googleRefusal,
  // Gemini takes input images but refuses a mask; Imagen takes none (the package throws and points at Vertex).
  editSupport: (model) =>
    isGeminiModel(model) ? { images: true, mask: false, maxImages: EDIT_IMAGE_COUNT_CEILING } : { images: false, mask: false, maxImages: 0 },
};
