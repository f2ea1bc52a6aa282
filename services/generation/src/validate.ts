import { ErrorCode, type CreateImageRequest, type Refusal } from "@orvado/proto";
import { refusal, tierName } from "@orvado/core";
import type { Tier } from "@orvado/proto";
import type { Catalog, CatalogModel } from "./catalog.ts";
import { parseSize, tierForSize, type ImageSize } from "./sizes.ts";

// The catalog's rules for a request whose JSON shape the edge already checked.

export const QUALITIES = ["low", "medium", "high", "xhigh", "max", "auto"] as const;
export const MAX_PROMPT_CHARS = 32_000;

export interface JobSpec {
  model: CatalogModel;
  prompt: string;
  size: ImageSize;
  tier: Tier;
  /** Only alpha models take a quality; for beta it is accepted and ignored. */
  quality: string | undefined;
  n: number;
}

export type Validation = { ok: true; spec: JobSpec } | { ok: false; refusal: Refusal };

const refuse = (code: ErrorCode, message: string): Validation => ({ ok: false, refusal: refusal(code, message) as Refusal });

export function validateImageRequest(req: CreateImageRequest, catalog: Catalog, maxImages: number): Validation {
  const model = catalog.get(req.model);
  if (!model) {
    return refuse(ErrorCode.UNKNOWN_MODEL, `Unknown model ${JSON.stringify(req.model)}; use one of: ${[...catalog.keys()].join(", ")}`);
  }
  if (req.allowedModels.length > 0 && !req.allowedModels.includes(model.id)) {
    return refuse(ErrorCode.MODEL_NOT_ALLOWED, `This API key may not use the model ${model.id}`);
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
  const quality = req.quality?.toLowerCase();
  if (quality !== undefined && !(QUALITIES as readonly string[]).includes(quality)) {
    return refuse(ErrorCode.INVALID_FIELD, `quality must be one of ${QUALITIES.join(", ")}`);
  }
  const n = req.n ?? 1;
  if (n < 1 || n > maxImages) return refuse(ErrorCode.INVALID_FIELD, `n must be an integer from 1 to ${maxImages}`);
  return {
    ok: true,
    spec: { model, prompt: req.prompt, size: parsed.size, tier, quality: model.family === "alpha" ? quality : undefined, n },
  };
}
