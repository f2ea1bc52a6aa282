import type { Route, SimulatorCore } from "../server.ts";
import { sizeForAspect } from "../png.ts";
import { asRecord, count, syncFault, inputCount, noteInputs } from "./common.ts";

// fal synchronous endpoint (the simulator's base is /fal; fal's own is the host root): POST {base}/<model path> (for example /fal-ai/flux/dev) with
// {prompt, image_size, num_images, seed}; the answer lists image URLs on fal's CDN that
// the client downloads. A content-policy refusal is a 422 whose detail type says so.

// A Map: image_size comes from the request, and only own entries may match.
const NAMED_SIZES = new Map<string, string>([
  ["square_hd", "1:1"],
  ["square", "1:1"],
  ["landscape_16_9", "16:9"],
  ["portrait_16_9", "9:16"],
  ["landscape_4_3", "4:3"],
  ["portrait_4_3", "3:4"],
]);

export function falRoutes(sim: SimulatorCore): Route[] {
  return [
    {
      name: "generate",
      method: "POST",
      pattern: /^\/fal\/[\w.-]+(?:\/[\w.-]+)*$/,
      async handle(req) {
        const body = asRecord(req.body);
        noteInputs(sim, inputCount(body, ["image_url", "image_urls"]), body.mask_url);
        const prompt = String(body.prompt ?? "");
        const effective = sim.effective(prompt);
        const fault = await syncFault(sim, req, effective, {
          refusal: () => ({
            status: 422,
            json: {
              detail: [
                {
                  loc: ["body", "prompt"],
                  msg: "The content could not be processed because it contained material flagged by a content checker.",
                  type: "content_policy_violation",
                },
              ],
            },
          }),
          failure: (status) => ({ status, json: { message: "Internal server error: the worker failed to process the request" } }),
        });
        if (fault) return fault;
        const imageSize = body.image_size;
        const sized = asRecord(imageSize);
        const asked =
          typeof sized.width === "number" && typeof sized.height === "number"
            ? { width: Math.min(sized.width, 4096), height: Math.min(sized.height, 4096) }
            : sizeForAspect(NAMED_SIZES.get(String(imageSize)) ?? "4:3", "1K");
        const n = count(body.num_images, 1, 4);
        const images = await Promise.all(Array.from({ length: n }, (_, index) => sim.render(asked, effective, `${prompt}#${index}`)));
        const size = effective.size ?? asked;
        return {
          status: 200,
          json: {
            images: images.map((png) => ({ url: sim.hostFile(png), width: size.width, height: size.height, content_type: "image/png" })),
            timings: { inference: effective.delayMs / 1000 },
            seed: 42,
            has_nsfw_concepts: images.map(() => false),
            prompt,
          },
        };
      },
    },
  ];
}
