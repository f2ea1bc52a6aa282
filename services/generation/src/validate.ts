import { ErrorCode, type CreateImageRequest, type Refusal } from "@orvado/proto";
import { EDIT_IMAGE_COUNT_CEILING, EDIT_UPLOAD_BYTES_CEILING, refusal, tierName } from "@orvado/core";
import type { Tier } from "@orvado/proto";
import type { Catalog, CatalogModel } from "./catalog.ts";
import { parseSize, tierForSize, type ImageSize } from "./sizes.ts";
import { channelCanEdit } from "./providers/edit-support.ts";
import { checkCatalogField, checkFieldValues, checkImageCount, GENERATION_FIELDS, type FieldFailure, type OutputFormat } from "@orvado/core/image-request";
import type { EditInputs } from "./edit-inputs.ts";
import { allowlistAdmits, findModel } from "./aliases.ts";

// The catalog's rules for a request whose JSON shape the edge already checked. The
// field rules themselves (ranges, closed sets, messages) are the request's contract
// (libs/core/src/image-request); a caller over RPC is held to them here again.

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
  /** Previews a stream asked for (`partial_images`, 0–3); providers that render previews send at most this many. */
  partialImages: number;
}

export type Validation = { ok: true; spec: JobSpec } | { ok: false; refusal: Refusal };

const refuse = (code: ErrorCode, message: string): { ok: false; refusal: Refusal } => ({ ok: false, refusal: refusal(code, message) as Refusal });
const refuseWith = (failure: FieldFailure) => refuse(failure.code, failure.message);

export function validateImageRequest(req: CreateImageRequest, catalog: Catalog, maxImages: number): Validation {
  const model = findModel(catalog, req.model);
  if (!model) {
    return refuse(ErrorCode.UNKNOWN_MODEL, `Unknown model ${JSON.stringify(req.model)}; use one of: ${[...catalog.keys()].join(", ")}`);
  }
  if (!allowlistAdmits(catalog, req.allowedModels, model)) {
    return refuse(ErrorCode.MODEL_NOT_ALLOWED, `This API key may not use the model ${model.id}`);
  }
  if (req.edit && !model.edits) {
    const editing = [...catalog.values()].filter((entry) => entry.edits).map((entry) => entry.id);
    return refuse(ErrorCode.EDITS_NOT_AVAILABLE, `The model ${model.id} does not take image edits; ${editing.length ? `models that do: ${editing.join(", ")}` : "no model here does"}`);
  }
  const prompt = checkCatalogField("prompt", req.prompt);
  if (!prompt.ok) return refuseWith(prompt);
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
  const quality = req.quality === undefined ? undefined : checkCatalogField("quality", req.quality);
  if (quality && !quality.ok) return refuseWith(quality);
  const n = checkImageCount(req.n, maxImages);
  if (!n.ok) return refuseWith(n);
  const output = checkOutput(req);
  if (!output.ok) return output;
  for (const field of ["background", "moderation"] as const) {
    const refusal = providerSupport(model, field, req[field]);
    if (refusal) return refusal;
  }
  return {
    ok: true,
    spec: {
      model,
      prompt: req.prompt,
      size: parsed.size,
      tier,
      quality: model.family === "alpha" ? quality?.value : undefined,
      n: n.value,
      output: output.spec,
      background: req.background,
      moderation: req.moderation,
      partialImages: output.partialImages,
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

/** The edge checked these already; a caller over RPC is held to the same rules ("" is how the wire says absent). */
function checkOutput(req: CreateImageRequest): { ok: true; spec: OutputSpec; partialImages: number } | { ok: false; refusal: Refusal } {
  const checked = checkFieldValues({
    partial_images: req.partialImages,
    user: req.user || undefined,
    output_format: req.outputFormat || undefined,
    output_compression: req.outputCompression,
    background: req.background,
    moderation: req.moderation,
  });
  if (!checked.ok) return refuseWith(checked);
  const format = (checked.values.output_format ?? GENERATION_FIELDS.output_format.default) as OutputFormat;
  const partialImages = (checked.values.partial_images as number | undefined) ?? GENERATION_FIELDS.partial_images.default;
  return { ok: true, spec: { format, compression: checked.values.output_compression as number | undefined }, partialImages };
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
