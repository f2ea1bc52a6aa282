import type { ProviderDefinition } from "../definition.ts";
import { blackForestLabsFactory } from "./adapter.ts";
import { blackForestLabsRefusal } from "./refusal.ts";

export const blackForestLabs: ProviderDefinition = {
  name: "black-forest-labs",
  factory: blackForestLabsFactory,
  defaultBaseUrl: "https://api.bfl.ai/v1",
  refusesWith4xxOnly: false,
  refusal: blackForestLabsRefusal,
  editSupport: () => ({ images: true, mask: true, maxImages: 10 }),
};
