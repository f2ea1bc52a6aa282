import { fileURLToPath } from "node:url";
import { parseCatalog, type ChannelConfig } from "../../catalog.ts";
import type { UpstreamRequest } from "../types.ts";

// What the comfyui tests that serve ComfyUI from a node:http server of their own share:
// one local channel on the repository's text-to-image workflow, and one request.

const CONFIG_DIR = fileURLToPath(new URL("../../../../../config", import.meta.url));

/** A comfyui channel at `baseUrl` (a private address, allowed), polling every 20 ms. */
export function localComfyChannel(baseUrl: string): ChannelConfig {
  const catalog = parseCatalog(
    {
      models: [
        {
          id: "local",
          family: "beta",
          tiers: ["1K"],
          channels: [{ name: "gpu", provider: "comfyui", baseUrl, workflow: "comfyui/text-to-image.json", output: "9", capacity: 1, allowPrivateNetwork: true, pollIntervalMs: 20 }],
        },
      ],
    },
    "models file",
    CONFIG_DIR,
  );
  return catalog.get("local")!.channels[0]!;
}

export const LIGHTHOUSE_REQUEST: UpstreamRequest = { prompt: "a lighthouse", width: 1024, height: 1024, n: 1, quality: undefined };
