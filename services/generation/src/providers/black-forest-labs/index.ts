import { loadedOnFirstUse } from "@orvado/core";
import type { ProviderDefinition } from "../definition.ts";
import { blackForestLabsRefusal } from "./refusal.ts";

export const blackForestLabs: ProviderDefinition = {
  name: "black-forest-labs",
  loadFactory: loadedOnFirstUse(() => import("./adapter.ts").then((adapter) => adapter.blackForestLabsFactory)),
  defaultBaseUrl: "https://api.bfl.ai/v1",
  refusesWith4xxOnly: false,
  refusal: blackForestLabsRefusal,
  editSupport: () => ({ images: true, mask: true, maxImages: 10 }),
};
