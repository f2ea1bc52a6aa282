import { EDIT_IMAGE_COUNT_CEILING, loadedOnFirstUse } from "@orvado/core";
import type { ProviderDefinition } from "../definition.ts";
import { googleRefusal } from "./refusal.ts";

export const google: ProviderDefinition = {
  name: "google",
  loadFactory: loadedOnFirstUse(() => import("./adapter.ts").then((adapter) => adapter.googleFactory)),
  defaultBaseUrl: "https://generativelanguage.googleapis.com/v1beta",
  refusesWith4xxOnly: false,
  refusal: googleRefusal,
  // Gemini takes input images but refuses a mask.
  editSupport: () => ({ images: true, mask: false, maxImages: EDIT_IMAGE_COUNT_CEILING }),
};
