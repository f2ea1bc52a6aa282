import type { SimReply, SimRequest, SimulatorCore } from "../server.ts";
import { parsePixelSize } from "../png.ts";
import { asRecord, count, syncFault } from "./common.ts";
import { asksForStream, partialImagesOf, streamReply, type StreamKind } from "./openai-stream.ts";

// OpenAI images: POST {base}/images/generations with {model, prompt, n, size, quality, ...},
// and POST {base}/images/edits as multipart/form-data (files image or image[], an optional
// mask, the same text fields); both answer {created, data: [{b64_json}]} (gpt-image models
// always answer base64). The OpenAI-compatible protocol is the same routes; its simulator
// can answer URLs instead. `stream: true` answers server-sent events (openai-stream.ts).

export interface OpenAiOptions {
  /** Answer data[].url (downloaded by the client) instead of b64_json, as some compatible servers do. */
  answerWithUrls?: () => boolean;
  refusalCode: string;
}

/** The magic bytes of the formats OpenAI's edits accept. */
const IMAGE_SIGNATURES = [Buffer.from([0x89, 0x50, 0x4e, 0x47]), Buffer.from([0xff, 0xd8, 0xff]), Buffer.from("RIFF")];
const isImage = (bytes: Buffer) => IMAGE_SIGNATURES.some((signature) => bytes.subarray(0, signature.length).equals(signature));

export function openAiRoutes(sim: SimulatorCore, options: OpenAiOptions) {
  const answer = (req: SimRequest, body: Record<string, unknown>, kind: StreamKind) => answerImages(sim, options, req, body, kind);
  return [
    {
      name: "generate",
      method: "POST" as const,
      pattern: /^\/v1\/images\/generations$/,
      handle: (req: SimRequest): Promise<SimReply> => answer(req, asRecord(req.body), "image_generation"),
    },
    {
      name: "edit",
      method: "POST" as const,
      pattern: /^\/v1\/images\/edits$/,
      async handle(req: SimRequest): Promise<SimReply> {
        const form = await readForm(req);
        if (!form) return invalid("The request must be multipart/form-data");
        const images = [...form.getAll("image"), ...form.getAll("image[]")].filter((value) => typeof value !== "string");
        const mask = form.get("mask");
        if (images.length === 0) return invalid("image is required");
        const bytes = await Promise.all(images.map(async (file) => Buffer.from(await (file as Blob).arrayBuffer())));
        if (!bytes.every(isImage)) return invalid("Invalid image file or mode for image, please check your image file.", "invalid_image_file");
        sim.sawInputs(bytes.length, mask !== null && typeof mask !== "string");
        // Text fields arrive as text: n as "2", stream as "true".
        const fields: Record<string, unknown> = Object.fromEntries([...form.entries()].filter(([, value]) => typeof value === "string"));
        if (fields.n !== undefined) fields.n = Number(fields.n);
        if (fields.stream !== undefined) fields.stream = fields.stream === "true";
        if (fields.partial_images !== undefined) fields.partial_images = Number(fields.partial_images);
        sim.stats.lastBody = { ...fields, images: bytes.length, mask: mask !== null };
        return answer(req, fields, "image_edit");
      },
    },
  ];
}

async function answerImages(sim: SimulatorCore, options: OpenAiOptions, req: SimRequest, body: Record<string, unknown>, kind: StreamKind): Promise<SimReply> {
  const prompt = String(body.prompt ?? "");
  const streamed = asksForStream(body);
  const partialImages = partialImagesOf(body.partial_images);
  if (partialImages === undefined) return invalid("partial_images must be an integer between 0 and 3", "invalid_value", "partial_images");
  const effective = sim.effective(prompt);
  // A stream spreads the model's latency over its events instead of waiting it before the answer.
  const fault = await syncFault(sim, req, streamed ? { ...effective, delayMs: 0 } : effective, {
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
  const size = effective.size ?? asked;
  if (streamed) return streamReply(sim, req, { kind, partialImages, images, size, body, effective, refusalCode: options.refusalCode });
  const urls = options.answerWithUrls?.() ?? false;
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
}

/** The multipart body as the platform's own FormData (undici's parser), or null when it is not one. */
async function readForm(req: SimRequest): Promise<FormData | null> {
  const type = String(req.headers["content-type"] ?? "");
  if (!type.startsWith("multipart/form-data")) return null;
  try {
    return await new Request("http://simulator.local/", { method: "POST", headers: { "content-type": type }, body: new Uint8Array(req.raw) }).formData();
  } catch {
    return null;
  }
}

const invalid = (message: string, code: string | null = null, param: string | null = null): SimReply => ({
  status: 400,
  json: { error: { message, type: "invalid_request_error", param, code } },
});
