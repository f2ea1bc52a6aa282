import { loadedOnFirstUse } from "@orvado/core";
import type { ProviderDefinition } from "../definition.ts";

// ComfyUI, a server of one's own: no content policy to refuse with (a workflow's own
// safety node, if any, fails the job), edits only where the channel maps a LoadImage node.
export const comfyui: ProviderDefinition = {
  name: "comfyui",
  loadFactory: loadedOnFirstUse(() => import("./adapter.ts").then((adapter) => adapter.comfyuiFactory)),
  refusesWith4xxOnly: true,
  refusal: () => undefined,
  editSupport: (_model, channel) =>
    channel?.comfyui?.edit ? { images: true, mask: channel.comfyui.edit.mask !== undefined, maxImages: 1 } : { images: false, mask: false, maxImages: 0 },
};
