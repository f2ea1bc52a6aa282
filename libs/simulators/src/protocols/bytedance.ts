import type { Route, SimulatorCore } from "../server.ts";
import { parsePixelSize, sizeForAspect } from "../png.ts";
import { asRecord, syncFault, inputCount, noteInputs } from "./common.ts";

// ByteDance ModelArk (Seedream): POST {base}/images/generations with {model, prompt, size, response_format};
// size is "WxH" or a resolution level ("2K"). One image per call. Refusals are 400s
// whose error code names the sensitive-content check.

export function byteDanceRoutes(sim: SimulatorCore): Route[] {
  return [
    {
      name: "generate",
      method: "POST",
      pattern: /^\/api\/v3\/images\/generations$/,
      async handle(req) {
        const body = asRecord(req.body);
        noteInputs(sim, inputCount(body, ["image"]), undefined);
        const prompt = String(body.prompt ?? "");
        const effective = sim.effective(prompt);
        const fault = await syncFault(sim, req, effective, {
          refusal: () => ({
            status: 400,
            json: {
              error: {
                code: "OutputImageSensitiveContentDetected",
                message: "The request failed because the output image may contain sensitive information.",
                param: "",
                type: "BadRequest",
              },
            },
          }),
          failure: (status) => ({ status, json: { error: { code: "InternalServiceError", message: "The service encountered an unexpected internal error.", param: "", type: "InternalServerError" } } }),
        });
        if (fault) return fault;
        const level = typeof body.size === "string" && /^[124]K$/i.test(body.size) ? body.size.toUpperCase() : undefined;
        const asked = parsePixelSize(body.size) ?? sizeForAspect("1:1", level ?? "2K");
        const png = await sim.render(asked, effective, prompt);
        const size = effective.size ?? asked;
        return {
          status: 200,
          json: {
            model: body.model,
            created: Math.floor(Date.now() / 1000),
            data: [{ b64_json: png.toString("base64"), size: `${size.width}x${size.height}` }],
            usage: { generated_images: 1, output_tokens: 4096, total_tokens: 4096 },
          },
        };
      },
    },
  ];
}
