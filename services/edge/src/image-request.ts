import { ErrorCode, ResponseFormat } from "@orvado/proto";
import { IMAGE_COUNT_CEILING } from "@orvado/core";

// The JSON shape of docs/api.md#request-body and the OpenAI fields real clients send beside it
// (docs/api.md, "Request fields"): which fields exist, their types and closed value
// sets. What the values mean for a model (sizes, tiers, n's range, whether its
// providers take background or moderation) is generation's to judge.

/** The OpenAI fields beyond the core interface (docs/api.md#request-body) that every image call takes (generations, and edits alike). */
export interface OutputFields {
  /** The client's id for its own end user; "" when absent. */
  user: string;
  /** "png" when absent. */
  outputFormat: string;
  outputCompression?: number;
  background?: string;
  moderation?: string;
}

export interface ImageRequestBody extends OutputFields {
  model: string;
  prompt: string;
  size?: string;
  quality?: string;
  responseFormat: ResponseFormat;
  n?: number;
}

type Failure = { ok: false; code: ErrorCode; message: string };
export type BodyCheck = { ok: true; body: ImageRequestBody } | Failure;
export type OutputFieldsCheck = { ok: true; fields: OutputFields } | Failure;

export const OUTPUT_FIELDS = ["user", "output_format", "output_compression", "background", "moderation"] as const;
const STRING_FIELDS = ["model", "prompt", "size", "quality", "response_format"] as const;
const ALLOWED_FIELDS = new Set<string>([...STRING_FIELDS, "n", ...OUTPUT_FIELDS]);
// Maps and arrays, not object literals: "constructor" or "__proto__" must not find Object.prototype's members.
const FORMATS = new Map<string, ResponseFormat>([
  ["url", ResponseFormat.URL],
  ["b64_json", ResponseFormat.B64_JSON],
]);
export const OUTPUT_FORMATS = ["png", "jpeg", "webp"] as const;
export const BACKGROUNDS = ["transparent", "opaque", "auto"] as const;
export const MODERATIONS = ["low", "auto"] as const;
/** OpenAI sets no bound; this one keeps the id a short label in the console, its CSV and the database. */
export const MAX_USER_CHARS = 256;
/** C0 and C1 controls (newlines, escapes) would break the console's rows and the CSV export. */
const CONTROL = /[\p{Cc}]/u;

const fail = (code: ErrorCode, message: string): Failure => ({ ok: false, code, message });
const isNothing = (value: unknown) => value === undefined || value === null;
const oneOf = (allowed: readonly string[], value: unknown): value is string => typeof value === "string" && allowed.includes(value);

/** The fields of OUTPUT_FIELDS in a parsed body; the body's other fields are the caller's to check. */
export function checkOutputFields(fields: Record<string, unknown>): OutputFieldsCheck {
  const user = fields.user;
  if (!isNothing(user) && (typeof user !== "string" || user.length < 1 || user.length > MAX_USER_CHARS || CONTROL.test(user))) {
    return fail(ErrorCode.INVALID_FIELD, `user must be a string of 1 to ${MAX_USER_CHARS} characters without control characters`);
  }
  const format = fields.output_format ?? "png";
  if (!oneOf(OUTPUT_FORMATS, format)) return fail(ErrorCode.INVALID_FIELD, `output_format must be one of ${OUTPUT_FORMATS.join(", ")}`);
  const compression = fields.output_compression;
  if (!isNothing(compression)) {
    if (!(typeof compression === "number" && Number.isInteger(compression) && compression >= 0 && compression <= 100)) {
      return fail(ErrorCode.INVALID_FIELD, "output_compression must be an integer from 0 to 100");
    }
    if (format === "png") return fail(ErrorCode.INVALID_FIELD, "output_compression applies to output_format jpeg or webp only, not png");
  }
  const background = fields.background;
  if (!isNothing(background) && !oneOf(BACKGROUNDS, background)) return fail(ErrorCode.INVALID_FIELD, `background must be one of ${BACKGROUNDS.join(", ")}`);
  // JPEG has no alpha channel: a transparent background cannot survive it.
  if (background === "transparent" && format === "jpeg") return fail(ErrorCode.INVALID_FIELD, "background transparent needs output_format png or webp; jpeg has no transparency");
  const moderation = fields.moderation;
  if (!isNothing(moderation) && !oneOf(MODERATIONS, moderation)) return fail(ErrorCode.INVALID_FIELD, `moderation must be one of ${MODERATIONS.join(", ")}`);
  return {
    ok: true,
    fields: {
      user: (user ?? "") as string,
      outputFormat: format,
      ...(!isNothing(compression) && { outputCompression: compression as number }),
      ...(!isNothing(background) && { background: background as string }),
      ...(!isNothing(moderation) && { moderation: moderation as string }),
    },
  };
}

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
  const output = checkOutputFields(fields);
  if (!output.ok) return output;
  return {
    ok: true,
    body: {
      model: fields.model as string,
      prompt: fields.prompt as string,
      size: (fields.size ?? undefined) as string | undefined,
      quality: (fields.quality ?? undefined) as string | undefined,
      responseFormat,
      n: (n ?? undefined) as number | undefined,
      ...output.fields,
    },
  };
}
