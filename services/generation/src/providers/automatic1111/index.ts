import { loadedOnFirstUse } from "@orvado/core";
import type { ProviderDefinition } from "../definition.ts";

// AUTOMATIC1111's web UI API, which Forge and SD.Next keep. No default address: a channel
// names its server (catalog.ts checks it).
export const automatic1111: ProviderDefinition = {
  name: "automatic1111",
  loadFactory: loadedOnFirstUse(() => import("./adapter.ts").then((adapter) => adapter.automatic1111Factory)),
  // A1111 has no content policy of its own: it never refuses, and its images are not parsed twice looking for a refusal.
  refusesWith4xxOnly: true,
  refusal: () => undefined,
  // img2img starts from one image; a mask makes it inpaint.
  editSupport: () => ({ images: true, mask: true, maxImages: 1 }),
};
