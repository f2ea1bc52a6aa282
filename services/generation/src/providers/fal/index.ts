import { loadedOnFirstUse } from "@orvado/core";
import type { ProviderDefinition } from "../definition.ts";
import { falRefusal } from "./refusal.ts";

export const fal: ProviderDefinition = {
  name: "fal",
  loadFactory: loadedOnFirstUse(() => import("./adapter.ts").then((adapter) => adapter.falFactory)),
  defaultBaseUrl: "https://fal.run",
  refusesWith4xxOnly: false,
  refusal: falRefusal,
  // Without its per-model multi-image option, fal uses the first image only.
  editSupport: () => ({ images: true, mask: true, maxImages: 1 }),
};
