import type { Route, SimReply, SimulatorCore } from "../server.ts";
import { sizeForAspect } from "../png.ts";
import { asRecord, syncFault, noteInputs } from "./common.ts";

// Google Generative Language API, the image path of @ai-sdk/google (Gemini image models;
// Google shut its Imagen API down): POST {base}/models/<id>:generateContent with
// generationConfig.responseModalities ["IMAGE"] and imageConfig {aspectRatio, imageSize};
// the image comes back as candidates[0].content.parts[].inlineData.
// A refusal is an IMAGE_SAFETY finish reason.

const failure = (status: number): SimReply => ({
  status,
  json: { error: { code: status, message: "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting", status: status === 503 ? "UNAVAILABLE" : "INTERNAL" } },
});

export function googleRoutes(sim: SimulatorCore): Route[] {
  return [
    {
      name: "generate",
      method: "POST",
      pattern: /^\/v1beta\/models\/([^/:]+):generateContent$/,
      async handle(req, match) {
        const body = asRecord(req.body);
        noteInputs(sim, inlineImages(body), undefined);
        const contents = Array.isArray(body.contents) ? body.contents : [];
        const parts = contents.flatMap((content) => (Array.isArray(asRecord(content).parts) ? (asRecord(content).parts as unknown[]) : []));
        const prompt = parts.map((part) => asRecord(part).text).filter((text) => typeof text === "string").join("\n");
        const effective = sim.effective(prompt);
        const fault = await syncFault(sim, req, effective, {
          refusal: () => ({
            status: 200,
            json: {
              candidates: [{ finishReason: "IMAGE_SAFETY", finishMessage: "Unable to show the generated image: it may violate our policies.", index: 0 }],
              modelVersion: match[1],
              usageMetadata: { promptTokenCount: 12, totalTokenCount: 12 },
            },
          }),
          failure,
        });
        if (fault) return fault;
        const config = asRecord(asRecord(body.generationConfig).imageConfig);
        const asked = sizeForAspect(config.aspectRatio as string | undefined, (config.imageSize as string | undefined) ?? "1K");
        const png = await sim.render(asked, effective, prompt);
        return {
          status: 200,
          json: {
            candidates: [
              {
                content: { role: "model", parts: [{ inlineData: { mimeType: "image/png", data: png.toString("base64") } }] },
                finishReason: "STOP",
                index: 0,
              },
            ],
            modelVersion: match[1],
            usageMetadata: { promptTokenCount: 12, candidatesTokenCount: 1290, totalTokenCount: 1302 },
          },
        };
      },
    },
  ];
}

/** Gemini's input images: inlineData parts of the request's contents. */
function inlineImages(body: Record<string, unknown>): number {
  const contents = Array.isArray(body.contents) ? body.contents : [];
  return contents.flatMap((content) => {
    const parts = asRecord(content).parts;
    return Array.isArray(parts) ? parts : [];
  }).filter((part) => asRecord(part).inlineData !== undefined).length;
}
