import { loadedOnFirstUse } from "@orvado/core";
import type { ProviderDefinition } from "../definition.ts";
import { replicateRefusal } from "./refusal.ts";

export const replicate: ProviderDefinition = {
  name: "replicate",
  loadFactory: loadedOnFirstUse(() => import("./adapter.ts").then((adapter) => adapter.replicateFactory)),
  defaultBaseUrl: "https://api.replicate.com/v1",
  refusesWith4xxOnly: false,
  refusal: replicateRefusal,
  // FLUX.2 takes up to 8 images and no mask; the other models use the first image only.
  editSupport: (model) => (/flux-2/.test(model) ? { images: true, mask: false, maxImages: 8 } : { images: true, mask: true, maxImages: 1 }),
};
