import sharp from "sharp";
import type { Effective, SimReply, SimRequest, SimulatorCore } from "../server.ts";

// OpenAI's streamed images: `stream: true` on /images/generations or /images/edits answers
// server-sent events (platform.openai.com/docs/api-reference/images-streaming):
// `partial_images` (0–3) `<kind>.partial_image` events as the image takes shape, then one
// `<kind>.completed` event per image, with `usage`; kind is image_generation or image_edit.
// An error after the stream began is an `error` event carrying OpenAI's error object.
// Here the partial images are downscaled renders of the first image, spaced over the
// model's latency; the prompt's fail-mid-stream and refuse-mid-stream directives end the
// stream with an error event after the first partial image.

export type StreamKind = "image_generation" | "image_edit";

export interface StreamPlan {
  kind: StreamKind;
  partialImages: number;
  images: Buffer[];
  size: { width: number; height: number };
  body: Record<string, unknown>;
  effective: Effective;
  refusalCode: string;
}

/** Whether the request asks for a stream (multipart fields arrive as text). */
export const asksForStream = (body: Record<string, unknown>) => body.stream === true || body.stream === "true";

/** partial_images as OpenAI takes it: a whole number 0–3 (absent is 0), else undefined. */
export function partialImagesOf(value: unknown): number | undefined {
  if (value === undefined || value === null) return 0;
  const number = typeof value === "string" && value.trim() !== "" ? Number(value) : value;
  return typeof number === "number" && Number.isInteger(number) && number >= 0 && number <= 3 ? number : undefined;
}

export function streamReply(sim: SimulatorCore, req: SimRequest, plan: StreamPlan): SimReply {
  return { status: 200, events: streamEvents(sim, req, plan) };
}

/** The smallest gap between two events, so they arrive as separate writes even without latency. */
const MIN_GAP_MS = 10;

async function* streamEvents(sim: SimulatorCore, req: SimRequest, plan: StreamPlan): AsyncGenerator<string> {
  const gap = Math.max(MIN_GAP_MS, Math.floor(plan.effective.delayMs / (plan.partialImages + 1)));
  const settings = eventSettings(plan);
  for (let index = 0; index < plan.partialImages; index += 1) {
    await sim.wait(gap, req);
    const preview = await downscaled(plan.images[0]!, plan.partialImages - index);
    yield frame(`${plan.kind}.partial_image`, { ...settings(preview), partial_image_index: index });
    if (midStreamFault(plan)) break;
  }
  const fault = midStreamFault(plan);
  if (fault) {
    yield frame("error", { error: fault });
    return;
  }
  await sim.wait(gap, req);
  for (const image of plan.images) yield frame(`${plan.kind}.completed`, { ...settings(image), usage: USAGE });
}

function eventSettings(plan: StreamPlan) {
  const { body, size } = plan;
  return (image: Buffer) => ({
    b64_json: image.toString("base64"),
    created_at: Math.floor(Date.now() / 1000),
    size: `${size.width}x${size.height}`,
    quality: typeof body.quality === "string" ? body.quality : "auto",
    background: typeof body.background === "string" ? body.background : "auto",
    output_format: "png",
  });
}

function midStreamFault(plan: StreamPlan) {
  if (plan.effective.mode === "refuse-mid-stream") {
    return {
      type: "image_generation_user_error",
      code: plan.refusalCode,
      message: "Your request was rejected as a result of our safety system. Your prompt may contain text that is not allowed by our safety system.",
      param: null,
    };
  }
  if (plan.effective.mode === "fail-mid-stream") return { type: "server_error", code: null, message: "The server had an error while processing your request.", param: null };
  return undefined;
}

const USAGE = { total_tokens: 1110, input_tokens: 10, output_tokens: 1100, input_tokens_details: { text_tokens: 10, image_tokens: 0 } };

/** A smaller render of the image: the earlier the partial image, the coarser. */
function downscaled(png: Buffer, coarseness: number): Promise<Buffer> {
  return sharp(png)
    .resize({ width: 64 * (4 - coarseness), withoutEnlargement: true })
    .png({ compressionLevel: 1 })
    .toBuffer();
}

/** One server-sent event: its name, and its data with `type` first, as OpenAI writes it. */
function frame(type: string, data: Record<string, unknown>): string {
  return `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
}
