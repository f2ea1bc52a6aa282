import { ErrorCode, type CreateImageRequest, type Refusal } from "@orvado/proto";
import { EDIT_IMAGE_COUNT_CEILING, EDIT_UPLOAD_BYTES_CEILING, refusal, tierName } from "@orvado/core";
import type { Tier } from "@orvado/proto";
import type { Catalog, CatalogModel } from "./catalog.ts";
import { parseSize, tierForSize, type ImageSize } from "./sizes.ts";
import { channelCanEdit } from "./providers/edit-support.ts";
import type { EditInputs } from "./edit-inputs.ts";

// The catalog's rules for a request whose JSON shape the edge already checked.

export const QUALITIES = ["low", "medium", "high", "xhigh", "max", "auto"] as const;
export const MAX_PROMPT_CHARS = 32_000;

/** The formats images are stored and answered in (sharp converts whatever the upstream returned). */
export const OUTPUT_FORMATS = ["png", "jpeg", "webp"] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];
const BACKGROUNDS = ["transparent", "opaque", "auto"];
const MODERATIONS = ["low", "auto"];
export const MAX_USER_CHARS = 256;

/**
 * The providers that take OpenAI's background and moderation fields (docs/api.md): OpenAI's GPT
 * Image models, and servers speaking its images API, which receive the field as sent.
 */
const PROVIDERS_TAKING: ReadonlyMap<"background" | "moderation", ReadonlySet<string>> = new Map([
  ["background", new Set(["openai", "openai-compatible"])],
  ["moderation", new Set(["openai", "openai-compatible"])],
]);

export interface OutputSpec {
  format: OutputFormat;
  /** 0-100, jpeg and webp only; the encoder's quality (OpenAI's default is 100). */
  compression: number | undefined;
}

export interface JobSpec {
  model: CatalogModel;
  prompt: string;
  size: ImageSize;
  tier: Tier;
  /** Only alpha models take a quality; for beta it is accepted and ignored. */
  quality: string | undefined;
  n: number;
  output: OutputSpec;
  /** Passed on to the upstream only when set; the model's channels all take them (PROVIDERS_TAKING). */
  background: string | undefined;
  moderation: string | undefined;
  /** Set for an image edit once its uploads are read (edit-inputs.ts); absent for a generation. */
  edit?: EditInputs;
}

export type Validation = { ok: true; spec: JobSpec } | { ok: false; refusal: Refusal };

const refuse = (code: ErrorCode, message: string): { ok: false; refusal: Refusal } => ({ ok: false, refusal: refusal(code, message) as Refusal });

export function validateImageRequest(req: CreateImageRequest, catalog: Catalog, maxImages: number): Validation {
  const model = catalog.get(req.model);
  if (!model) {
    return refuse(ErrorCode.UNKNOWN_MODEL, `Unknown model ${JSON.stringify(req.model)}; use one of: ${[...catalog.keys()].join(", ")}`);
  }
  if (req.allowedModels.length > 0 && !req.allowedModels.includes(model.id)) {
    return refuse(ErrorCode.MODEL_NOT_ALLOWED, `This API key may not use the model ${model.id}`);
  }
  if (req.edit && !model.edits) {
    const editing = [...catalog.values()].filter((entry) => entry.edits).map((entry) => entry.id);
    return refuse(ErrorCode.EDITS_NOT_AVAILABLE, `The model ${model.id} does not take image edits; ${editing.length ? `models that do: ${editing.join(", ")}` : "no model here does"}`);
  }
  if (!req.prompt.trim()) return refuse(ErrorCode.MISSING_FIELD, "prompt must not be empty");
  if (req.prompt.length > MAX_PROMPT_CHARS) {
    return refuse(ErrorCode.INVALID_FIELD, `prompt is longer than ${MAX_PROMPT_CHARS} characters`);
  }
  const parsed = parseSize(req.size);
  if (!parsed.ok) return refuse(ErrorCode.INVALID_SIZE, parsed.message);
  const tier = tierForSize(parsed.size);
  if (!model.tiers.includes(tier)) {
    const offered = model.tiers.map(tierName).join(", ");
    return refuse(ErrorCode.TIER_NOT_OFFERED, `The model ${model.id} does not offer the ${tierName(tier)} tier (size ${parsed.size.label}); it offers ${offered}`);
  }
  if (req.edit) {
    const uploads = checkEditUploads(req, model, tier);
    if (uploads) return uploads;
  }
  const quality = req.quality?.toLowerCase();
  if (quality !== undefined && !(QUALITIES as readonly string[]).includes(quality)) {
    return refuse(ErrorCode.INVALID_FIELD, `quality must be one of ${QUALITIES.join(", ")}`);
  }
  const n = req.n ?? 1;
  if (n < 1 || n > maxImages) return refuse(ErrorCode.INVALID_FIELD, `n must be an integer from 1 to ${maxImages}`);
  const output = checkOutput(req);
  if (!output.ok) return output;
  for (const field of ["background", "moderation"] as const) {
    const refusal = providerSupport(model, field, req[field]);
    if (refusal) return refusal;
  }
  if (req.user.length > MAX_USER_CHARS) return refuse(ErrorCode.INVALID_FIELD, `user must be at most ${MAX_USER_CHARS} characters`);
  return {
    ok: true,
    spec: {
      model,
      prompt: req.prompt,
      size: parsed.size,
      tier,
      quality: model.family === "alpha" ? quality : undefined,
      n,
      output: output.spec,
      background: req.background,
      moderation: req.moderation,
    },
  };
}

/** What an edit must carry before its bytes are read: 1 to 16 images within the byte ceiling, a channel that can run it. */
function checkEditUploads(req: CreateImageRequest, model: CatalogModel, tier: Tier): Validation | null {
  const count = req.inputImages.length;
  if (count === 0) return refuse(ErrorCode.MISSING_FIELD, "image is required: send one or more image files (multipart/form-data)");
  if (count > EDIT_IMAGE_COUNT_CEILING) return refuse(ErrorCode.INVALID_FIELD, `An edit takes at most ${EDIT_IMAGE_COUNT_CEILING} images; got ${count}`);
  const bytes = req.inputImages.reduce((sum, image) => sum + image.data.length, req.mask?.data.length ?? 0);
  if (bytes > EDIT_UPLOAD_BYTES_CEILING) return refuse(ErrorCode.BODY_TOO_LARGE, `The files of an edit may total at most ${EDIT_UPLOAD_BYTES_CEILING} bytes`);
  const edit = { withMask: req.mask !== undefined, images: count };
  if (!model.channels.some((channel) => channel.tiers.includes(tier) && channelCanEdit(channel, edit))) {
    const what = `${count} image${count === 1 ? "" : "s"}${edit.withMask ? " and a mask" : ""}`;
    return refuse(ErrorCode.EDITS_NOT_AVAILABLE, `The model ${model.id} has no upstream that edits ${what} at the ${tierName(tier)} tier`);
  }
  return null;
}

/** The edge checked these already; a caller over RPC is held to the same closed sets. */
function checkOutput(req: CreateImageRequest): { ok: true; spec: OutputSpec } | { ok: false; refusal: Refusal } {
  const format = (req.outputFormat || "png") as OutputFormat;
  if (!OUTPUT_FORMATS.includes(format)) return refuse(ErrorCode.INVALID_FIELD, `output_format must be one of ${OUTPUT_FORMATS.join(", ")}`);
  const compression = req.outputCompression;
  if (compression !== undefined && (compression > 100 || format === "png")) {
    return refuse(ErrorCode.INVALID_FIELD, "output_compression must be 0 to 100, with output_format jpeg or webp");
  }
  if (req.background !== undefined && !BACKGROUNDS.includes(req.background)) return refuse(ErrorCode.INVALID_FIELD, `background must be one of ${BACKGROUNDS.join(", ")}`);
  if (req.moderation !== undefined && !MODERATIONS.includes(req.moderation)) return refuse(ErrorCode.INVALID_FIELD, `moderation must be one of ${MODERATIONS.join(", ")}`);
  return { ok: true, spec: { format, compression } };
}

/**
 * A field only some providers take is refused, naming the model, unless every channel of the
 * model takes it: failover may move the job to any of them, and none may silently drop it.
 */
function providerSupport(model: CatalogModel, field: "background" | "moderation", value: string | undefined): Validation | null {
  if (value === undefined) return null;
  const taking = PROVIDERS_TAKING.get(field)!;
  const without = [...new Set(model.channels.map((channel) => channel.provider).filter((provider) => !taking.has(provider)))];
  if (without.length === 0) return null;
  return refuse(
    ErrorCode.INVALID_FIELD,
    `The model ${model.id} does not take ${field}: its channels use ${without.join(", ")}, which has no such setting (docs/api.md lists the providers that do)`,
  );
}
