import { ErrorCode, ResponseFormat } from "@orvado/proto";
import { IMAGE_COUNT_CEILING } from "@orvado/core";

// The JSON shape of spec 2.1: which fields exist and their types. What the
// values mean (models, sizes, tiers, n's range) is generation's to judge.

export interface ImageRequestBody {
  model: string;
  prompt: string;
  size?: string;
  quality?: string;
  responseFormat: ResponseFormat;
  n?: number;
}

export type BodyCheck = { ok: true; body: ImageRequestBody } | { ok: false; code: ErrorCode; message: string };

const STRING_FIELDS = ["model", "prompt", "size", "quality", "response_format"] as const;
const ALLOWED_FIELDS = new Set<string>([...STRING_FIELDS, "n"]);
// A Map, not an object literal: "constructor" or "__proto__" must not find Object.prototype's members.
const FORMATS = new Map<string, ResponseFormat>([
  ["url", ResponseFormat.URL],
  ["b64_json", ResponseFormat.B64_JSON],
]);

const fail = (code: ErrorCode, message: string): BodyCheck => ({ ok: false, code, message });

export function checkImageRequestBody(body: unknown): BodyCheck {
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    return fail(ErrorCode.INVALID_REQUEST, "The request body must be a JSON object");
  }
  const fields = body as Record<string, unknown>;
  const unknown = Object.keys(fields).find((name) => !ALLOWED_FIELDS.has(name));
  if (unknown !== undefined) {
    return fail(ErrorCode.UNKNOWN_FIELD, `Unknown field ${JSON.stringify(unknown.slice(0, 100))}; supported fields: ${[...ALLOWED_FIELDS].join(", ")}`);
  }
  for (const name of ["model", "prompt"] as const) {
    if (fields[name] === undefined || fields[name] === null) return fail(ErrorCode.MISSING_FIELD, `${name} is required`);
  }
  for (const name of STRING_FIELDS) {
    const value = fields[name];
    if (value !== undefined && value !== null && typeof value !== "string") return fail(ErrorCode.INVALID_FIELD, `${name} must be a string`);
  }
  const n = fields.n;
  // Generation's GENERATION_MAX_IMAGES may allow fewer; no configuration allows more than the
  // ceiling, and checking it here keeps 2^32 and up from overflowing the uint32 on the wire.
  if (n !== undefined && n !== null && !(typeof n === "number" && Number.isInteger(n) && n >= 1 && n <= IMAGE_COUNT_CEILING)) {
    return fail(ErrorCode.INVALID_FIELD, `n must be an integer from 1 to ${IMAGE_COUNT_CEILING}; got ${JSON.stringify(n).slice(0, 40)}`);
  }
  const format = (fields.response_format ?? "url") as string;
  const responseFormat = FORMATS.get(format);
  if (responseFormat === undefined) return fail(ErrorCode.INVALID_FIELD, "response_format must be url or b64_json");
  return {
    ok: true,
    body: {
      model: fields.model as string,
      prompt: fields.prompt as string,
      size: (fields.size ?? undefined) as string | undefined,
      quality: (fields.quality ?? undefined) as string | undefined,
      responseFormat,
      n: (n ?? undefined) as number | undefined,
    },
  };
}
