import { APICallError, type ImageModelV4, type ImageModelV4CallOptions, type ImageModelV4File, type ImageModelV4Result } from "@ai-sdk/provider";
import { EventSourceParserStream, type EventSourceMessage } from "eventsource-parser/stream";
import type { UpstreamProvider } from "../catalog.ts";
import { UpstreamFailure, UpstreamRefusal } from "./errors.ts";
import { asObject, type Json, text } from "./refusal-parts.ts";
import { providerDefinition } from "./registry.ts";
import type { FactoryInput, UpstreamProgress } from "./types.ts";

// OpenAI's streamed images (`stream: true` with `partial_images` on /images/generations and
// /images/edits), which OpenAI and OpenAI-compatible channels share: the answer is server-sent
// events, `image_generation.partial_image` / `image_edit.partial_image` as the image takes shape,
// then `*.completed` with each final image, or an `error` event. Partial images go to the job's
// onProgress; the final images come back as the AI SDK's image model answers, so upstream.ts
// and everything after it treat a streamed call as any other. The AI SDK packages do not stream
// images, hence this model of our own; it talks through the guarded fetch like them.

export interface StreamedImageSettings {
  provider: Exclude<UpstreamProvider, "sandbox">;
  modelId: string;
  baseUrl: string;
  apiKey: string | undefined;
  fetch: typeof fetch;
  /** partial_images as the client asked (1–3). */
  partialImages: number;
  /** The key of the call's providerOptions whose fields (quality, background, moderation) go into the request as they are. */
  optionsKey: string;
  onProgress: (progress: UpstreamProgress) => void;
}

/** The job asked for partial images and someone listens for them: the channel streams. */
export function wantsPartialImages(input: Pick<FactoryInput, "request" | "onProgress">): input is typeof input & { onProgress: NonNullable<FactoryInput["onProgress"]> } {
  return (input.request.partialImages ?? 0) > 0 && input.onProgress !== undefined;
}

export function streamedImageModel(settings: StreamedImageSettings): ImageModelV4 {
  return {
    specificationVersion: "v4",
    provider: settings.provider,
    modelId: settings.modelId,
    maxImagesPerCall: undefined,
    doGenerate: (options) => generateStreamed(settings, options),
  };
}

async function generateStreamed(settings: StreamedImageSettings, options: ImageModelV4CallOptions): Promise<ImageModelV4Result> {
  const edit = (options.files?.length ?? 0) > 0;
  const url = `${settings.baseUrl.replace(/\/+$/, "")}/images/${edit ? "edits" : "generations"}`;
  const fields = {
    model: settings.modelId,
    prompt: options.prompt ?? "",
    n: options.n,
    ...(options.size && { size: options.size }),
    ...asObject(options.providerOptions[settings.optionsKey]),
    stream: true,
    partial_images: settings.partialImages,
  };
  const response = await settings.fetch(url, {
    method: "POST",
    headers: {
      ...(settings.apiKey !== undefined && { authorization: `Bearer ${settings.apiKey}` }),
      ...(!edit && { "content-type": "application/json" }),
      accept: "text/event-stream",
    },
    body: edit ? multipartBody(fields, options.files!, options.mask) : JSON.stringify(fields),
    signal: options.abortSignal,
  });
  if (!response.ok) throw await callError(url, fields, response);
  const images = isEventStream(response) ? await imagesFromEvents(settings, response) : await imagesFromJson(settings, response, options.abortSignal);
  return {
    images,
    warnings: [],
    response: { timestamp: new Date(), modelId: settings.modelId, headers: Object.fromEntries(response.headers) },
  };
}

const isEventStream = (response: Response) => /^\s*text\/event-stream\b/i.test(response.headers.get("content-type") ?? "");

/** An edit's fields as OpenAI's multipart form: one image as `image`, several as `image[]` (as the AI SDK's packages send them). */
function multipartBody(fields: Record<string, unknown>, files: ImageModelV4File[], mask: ImageModelV4File | undefined): FormData {
  const form = new FormData();
  for (const [name, value] of Object.entries(fields)) if (value !== undefined && value !== null) form.append(name, String(value));
  const imageField = files.length === 1 ? "image" : "image[]";
  files.forEach((file, index) => form.append(imageField, blobOf(file), `image-${index}`));
  if (mask) form.append("mask", blobOf(mask), "mask");
  return form;
}

/** upstream.ts gives an edit's inputs as bytes with their media type. */
function blobOf(file: ImageModelV4File): Blob {
  if (file.type !== "file") throw new UpstreamFailure("an edit's input image must be given as bytes");
  const bytes = typeof file.data === "string" ? Buffer.from(file.data, "base64") : file.data;
  return new Blob([bytes as Uint8Array<ArrayBuffer>], { type: file.mediaType });
}

/** A failed answer as the AI SDK's packages report it (a refusal among them was already told apart by the guarded fetch). */
async function callError(url: string, fields: Record<string, unknown>, response: Response): Promise<APICallError> {
  const body = await response.text().catch(() => "");
  let message = `the upstream answered ${response.status}`;
  try {
    message = text(asObject(asObject(JSON.parse(body)).error).message) || message;
  } catch {
    // Not JSON: the status says it.
  }
  return new APICallError({
    message,
    url,
    requestBodyValues: { ...fields, prompt: undefined },
    statusCode: response.status,
    responseHeaders: Object.fromEntries(response.headers),
    responseBody: body.slice(0, 2000),
    isRetryable: response.status === 429 || response.status >= 500,
  });
}

/**
 * The events of one streamed call: each partial image to onProgress, each completed image kept.
 * An `error` event ends the call: a refusal when the provider's refusal rule says so (the same
 * rule as its error answers), else a failure. A stream that ends without an image is a failure.
 */
async function imagesFromEvents(settings: StreamedImageSettings, response: Response): Promise<Uint8Array[]> {
  const images: Uint8Array[] = [];
  // The client asked for this many: an upstream that sends more does not get them passed on.
  let partialsLeft = settings.partialImages;
  const events = response.body!.pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream({ onError: "terminate" }));
  // Leaving the loop (an error event) cancels the stream, which lets the connection go.
  for await (const message of events as unknown as AsyncIterable<EventSourceMessage>) {
    const event = parseEvent(message);
    const type = text(event.type) || message.event || "";
    if (type === "error" || message.event === "error" || event.error !== undefined) throw streamError(settings.provider, event);
    if (type.endsWith(".partial_image")) {
      if (partialsLeft-- > 0) settings.onProgress({ preview: { bytes: imageBytes(event), mediaType: mediaTypeOf(event.output_format) } });
    }
    else if (type.endsWith(".completed")) images.push(imageBytes(event));
  }
  if (images.length === 0) throw new UpstreamFailure("the upstream's event stream ended without a completed image");
  return images;
}

function parseEvent(message: EventSourceMessage): Json {
  try {
    return asObject(JSON.parse(message.data));
  } catch {
    throw new UpstreamFailure(`the upstream sent an event that is not JSON (${message.event ?? "message"})`);
  }
}

/** OpenAI's error event carries its error as `error` (the openai SDK reads `data.error ?? data`). */
function streamError(provider: StreamedImageSettings["provider"], event: Json): Error {
  const error = event.error !== undefined ? asObject(event.error) : event;
  const reason = providerDefinition(provider)?.refusal({ error });
  if (reason !== undefined) return new UpstreamRefusal(reason);
  const described = [text(error.code), text(error.message)].filter(Boolean).join(": ");
  return new UpstreamFailure(`the upstream's event stream failed: ${described || "an error event"}`);
}

function imageBytes(event: Json): Uint8Array {
  const base64 = text(event.b64_json);
  if (base64 === "") throw new UpstreamFailure(`the upstream sent a ${text(event.type) || "image"} event without b64_json`);
  return Buffer.from(base64, "base64");
}

const MEDIA_TYPES: Record<string, NonNullable<UpstreamProgress["preview"]>["mediaType"]> = { png: "image/png", jpeg: "image/jpeg", webp: "image/webp" };

/** The event's output_format as a media type; PNG, OpenAI's default, when absent or unknown. */
const mediaTypeOf = (format: unknown) => MEDIA_TYPES[text(format)] ?? "image/png";

/**
 * An OpenAI-compatible server that does not stream answers `stream: true` as it answers any
 * call: the images come as JSON (base64 or links, downloaded through the guarded fetch), with
 * no partial images.
 */
async function imagesFromJson(settings: StreamedImageSettings, response: Response, signal: AbortSignal | undefined): Promise<Uint8Array[]> {
  const data = asObject(await response.json().catch(() => ({}))).data;
  const items = Array.isArray(data) ? data.map(asObject) : [];
  const images = await Promise.all(items.map((item) => (item.b64_json ? Buffer.from(text(item.b64_json), "base64") : download(settings, text(item.url), signal))));
  if (images.length === 0) throw new UpstreamFailure("the upstream's answer held no image");
  return images;
}

async function download(settings: StreamedImageSettings, url: string, signal: AbortSignal | undefined): Promise<Uint8Array> {
  if (url === "") throw new UpstreamFailure("the upstream's answer held an image with neither b64_json nor url");
  const response = await settings.fetch(url, { signal });
  if (!response.ok) throw new UpstreamFailure(`the upstream's image link answered ${response.status}`);
  return new Uint8Array(await response.arrayBuffer());
}
