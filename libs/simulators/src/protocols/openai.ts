import type { SimReply, SimulatorCore } from "../server.ts";
import { parsePixelSize } from "../png.ts";
import { asRecord, count, syncFault } from "./common.ts";

// OpenAI images: POST {base}/images/generations with {model, prompt, n, size, quality, ...};
// the answer is {created, data: [{b64_json}]} (gpt-image models always answer base64).
// The OpenAI-compatible protocol is the same route; its simulator can answer URLs instead.

export interface OpenAiOptions {
  /** Answer data[].url (downloaded by the client) instead of b64_json, as some compatible servers do. */
  answerWithUrls?: () => boolean;
  refusalCode: string;
}

export function openAiRoutes(sim: SimulatorCore, options: OpenAiOptions) {
  return [
    {
      name: "generate",
      method: "POST" as const,
      pattern: /^\/v1\/images\/generations$/,
      async handle(req: Parameters<typeof syncFault>[1]): Promise<SimReply> {
        const body = asRecord(req.body);
        const prompt = String(body.prompt ?? "");
        const effective = sim.effective(prompt);
        const fault = await syncFault(sim, req, effective, {
          refusal: () => ({
            status: 400,
            json: {
              error: {
                message: "Your request was rejected as a result of our safety system. Your prompt may contain text that is not allowed by our safety system.",
                type: "image_generation_user_error",
                param: null,
                code: options.refusalCode,
              },
            },
          }),
          failure: (status) => ({ status, json: { error: { message: "The server had an error while processing your request.", type: "server_error", param: null, code: null } } }),
        });
        if (fault) return fault;
        const asked = parsePixelSize(body.size) ?? { width: 1024, height: 1024 };
        const n = count(body.n);
        const images = await Promise.all(Array.from({ length: n }, (_, index) => sim.render(asked, effective, `${prompt}#${index}`)));
        const urls = options.answerWithUrls?.() ?? false;
        const size = effective.size ?? asked;
        return {
          status: 200,
          json: {
            created: Math.floor(Date.now() / 1000),
            data: images.map((png) => (urls ? { url: sim.hostFile(png) } : { b64_json: png.toString("base64") })),
            size: `${size.width}x${size.height}`,
            output_format: "png",
            usage: { input_tokens: 10, output_tokens: 1000, total_tokens: 1010 },
          },
        };
      },
    },
  ];
}
