import { z } from "zod";
import { ErrorCode, ResponseFormat, type CreateImageRequest } from "@orvado/proto";
import { IMAGE_COUNT_CEILING } from "../limits.ts";

// The one definition of the public image request (docs/api.md#request-body and
// "Image edits"): each field's name, type, range, closed set, default and refusal
// message. The edge checks bodies with it (check.ts), generation checks the rules
// that wait for the model with it, and the OpenAPI document's request bodies are
// derived from it (json-schema.ts). A new field is one entry in GENERATION_FIELDS
// (and, for generation to receive it, its field in CreateImageRequest).

export const MAX_PROMPT_CHARS = 32_000;
/** OpenAI sets no bound; this one keeps the id a short label in the console, its CSV and the database. */
export const MAX_USER_CHARS = 256;
export const MIN_SIDE_PX = 64;
export const MAX_SIDE_PX = 4096;
/** Applied by generation (sizes.ts), which reads every size. */
export const DEFAULT_SIZE = "1024x1024";
/** Applied by generation (checkImageCount). */
export const DEFAULT_IMAGE_COUNT = 1;
/** OpenAI's default output_compression, the encoder's best quality; applied by generation's encoder (output-format.ts). */
export const DEFAULT_OUTPUT_COMPRESSION = 100;

export const QUALITIES = ["low", "medium", "high", "xhigh", "max", "auto"] as const;
export const RESPONSE_FORMATS = ["url", "b64_json"] as const;
/** The formats images are stored and answered in (sharp converts whatever the upstream returned). */
export const OUTPUT_FORMATS = ["png", "jpeg", "webp"] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];
export const BACKGROUNDS = ["transparent", "opaque", "auto"] as const;
/** OpenAI's bound on `partial_images` (docs/api.md#streaming). */
export const MAX_PARTIAL_IMAGES = 3;
/** Applied by generation (validate.ts): no previews unless asked for. */
export const DEFAULT_PARTIAL_IMAGES = 0;
export const MODERATIONS = ["low", "auto"] as const;

export interface RequestField {
  /** A present, non-null value's type, range and closed set; each check carries its invalid_field message. Checked at the edge, before the wire. */
  readonly schema: z.ZodType;
  /**
   * The whole rule, where part of it waits until generation knows the model
   * (docs/api.md#order-of-checks: prompt, quality and n come after the model's checks).
   */
  readonly catalog?: z.ZodType;
  readonly required?: true;
  /** What an absent field means, as documented; applied by the edge when whenAbsent says so, else where its DEFAULT_ constant says. */
  readonly default?: string | number | boolean;
  /** What the edge puts on the wire for an absent field: proto3 strings and enums cannot be absent. */
  readonly whenAbsent?: string;
  /**
   * The CreateImageRequest field the value travels in; absent for a field that only tells the
   * edge how to answer (`stream`: the edge picks the StreamImage call instead of CreateImage).
   */
  readonly rpc?: keyof Omit<CreateImageRequest, "$typeName">;
  readonly toRpc?: (value: never) => unknown;
  readonly description?: string;
  readonly examples?: readonly string[];
}

const text = (name: string) => z.string({ error: `${name} must be a string` });
const oneOf = <const T extends readonly [string, ...string[]]>(name: string, values: T, message = `${name} must be one of ${values.join(", ")}`) =>
  z.enum(values, { error: message });
/** The refused value, short; only a primitive is spelled out (a deeply nested array must not be walked). */
const got = (value: unknown) => (typeof value === "object" && value !== null ? (Array.isArray(value) ? "an array" : "an object") : String(JSON.stringify(value)).slice(0, 40));

const imageCounts = new Map<number, z.ZodType<number>>();
/** n from 1 to max: the edge holds it to IMAGE_COUNT_CEILING (n is a uint32 on the wire), generation to its configured maximum. */
export function imageCount(max: number): z.ZodType<number> {
  let schema = imageCounts.get(max);
  if (!schema) {
    const error = (issue: { input: unknown }) => `n must be an integer from 1 to ${max}; got ${got(issue.input)}`;
    schema = z.int({ error }).min(1, { error }).max(max, { error });
    imageCounts.set(max, schema);
  }
  return schema;
}

/** Blank counts as missing (missing_field), as docs/api.md#error-codes says; zod carries the code in the issue's params. */
const notBlank = (name: string) => [(value: string) => value.trim() !== "", { error: `${name} must not be empty`, params: { code: ErrorCode.MISSING_FIELD } }] as const;

/** The fields of POST /v1/images/generations, in the order they are checked and listed in messages. */
export const GENERATION_FIELDS = {
  model: { schema: text("model"), required: true, rpc: "model", description: "A model id from GET /v1/models" },
  prompt: {
    schema: text("prompt"),
    catalog: text("prompt")
      .refine(...notBlank("prompt"))
      .min(1, { error: "prompt must not be empty" })
      .max(MAX_PROMPT_CHARS, { error: `prompt is longer than ${MAX_PROMPT_CHARS} characters` }),
    required: true,
    rpc: "prompt",
    description: "What to draw; not only whitespace",
  },
  size: {
    schema: text("size"),
    default: DEFAULT_SIZE,
    rpc: "size",
    description: `\`<width>x<height>\` (${MIN_SIDE_PX}-${MAX_SIDE_PX} px a side), \`auto\`, \`1k\`, \`2k\` or \`4k\`; anything else is 400 invalid_size`,
    examples: ["1024x1024", "1536x1024", "2k"],
  },
  quality: {
    schema: text("quality"),
    // Matched in any case ("HIGH" is high); generation passes the lower-case value on.
    catalog: z.preprocess((value) => (typeof value === "string" ? value.toLowerCase() : value), oneOf("quality", QUALITIES)),
    rpc: "quality",
    description: "Alpha models only; never changes the price",
  },
  response_format: {
    schema: oneOf("response_format", RESPONSE_FORMATS, "response_format must be url or b64_json"),
    default: "url",
    whenAbsent: "url",
    rpc: "responseFormat",
    toRpc: (format: (typeof RESPONSE_FORMATS)[number]) => (format === "b64_json" ? ResponseFormat.B64_JSON : ResponseFormat.URL),
  },
  n: {
    // Generation's GENERATION_MAX_IMAGES may allow fewer (imageCount(max) there); no configuration allows more.
    schema: imageCount(IMAGE_COUNT_CEILING),
    default: DEFAULT_IMAGE_COUNT,
    rpc: "n",
    description: "Up to GENERATION_MAX_IMAGES (default 4)",
  },
  user: {
    // No C0 or C1 controls: newlines and escapes would break the console's rows and its CSV export.
    schema: z
      .string({ error: userMessage() })
      .min(1, { error: userMessage() })
      .max(MAX_USER_CHARS, { error: userMessage() })
      .regex(/^\P{Cc}*$/u, { error: userMessage() }),
    whenAbsent: "",
    rpc: "user",
    description: "Your id for your own end user: stored with the cost record, shown and filterable in the console's usage",
  },
  output_format: {
    schema: oneOf("output_format", OUTPUT_FORMATS),
    default: "png",
    whenAbsent: "png",
    rpc: "outputFormat",
    description: "Converted with sharp whatever the provider returned",
  },
  output_compression: {
    schema: z.int({ error: compressionMessage() }).min(0, { error: compressionMessage() }).max(100, { error: compressionMessage() }),
    default: DEFAULT_OUTPUT_COMPRESSION,
    rpc: "outputCompression",
    description: "Encoder quality for jpeg and webp only",
  },
  background: {
    schema: oneOf("background", BACKGROUNDS),
    rpc: "background",
    description: "Only for models whose every channel is an openai or openai-compatible provider; otherwise 400 invalid_field naming the model",
  },
  moderation: {
    schema: oneOf("moderation", MODERATIONS),
    rpc: "moderation",
    description: "As background: openai and openai-compatible providers only",
  },
  stream: {
    schema: z.boolean({ error: "stream must be true or false" }),
    default: false,
    description: "true answers text/event-stream: partial images, then one completed event per image (docs/api.md#streaming)",
  },
  partial_images: {
    // Without stream it is accepted and ignored, as OpenAI does.
    schema: z
      .int({ error: partialImagesMessage() })
      .min(0, { error: partialImagesMessage() })
      .max(MAX_PARTIAL_IMAGES, { error: partialImagesMessage() }),
    default: DEFAULT_PARTIAL_IMAGES,
    rpc: "partialImages",
    description: "Previews sent as partial_image events before the image, when the upstream makes them; only with stream",
  },
} as const satisfies Record<string, RequestField>;

function userMessage() {
  return `user must be a string of 1 to ${MAX_USER_CHARS} characters without control characters`;
}
function partialImagesMessage() {
  return `partial_images must be an integer from 0 to ${MAX_PARTIAL_IMAGES}`;
}
function compressionMessage() {
  return "output_compression must be an integer from 0 to 100";
}

export type FieldName = keyof typeof GENERATION_FIELDS;
type RpcOf<T> = T extends { rpc: infer R } ? R : never;
export type RpcName = RpcOf<(typeof GENERATION_FIELDS)[FieldName]>;

/** Rules between fields, checked once each field passed its own (the output_format default included). */
export const COMBINATION_RULES: readonly { refuses: (values: FieldValues) => boolean; message: string }[] = [
  {
    refuses: (values) => values.output_compression !== undefined && outputFormatOf(values) === "png",
    message: "output_compression applies to output_format jpeg or webp only, not png",
  },
  {
    // JPEG has no alpha channel: a transparent background cannot survive it.
    refuses: (values) => values.background === "transparent" && outputFormatOf(values) === "jpeg",
    message: "background transparent needs output_format png or webp; jpeg has no transparency",
  },
];

export type FieldValues = Partial<Record<FieldName, unknown>>;
const outputFormatOf = (values: FieldValues) => values.output_format ?? GENERATION_FIELDS.output_format.default;

/** The file fields of POST /v1/images/edits (multipart/form-data); its text fields are GENERATION_FIELDS. */
export const EDIT_FILE_FIELDS = {
  image: { role: "image", description: "The image to edit (PNG, JPEG or WebP); several as `image[]`" },
  "image[]": { role: "image", description: "Several images: the first is edited, the others are references" },
  mask: { role: "mask", description: "Optional PNG whose transparent pixels mark where to edit" },
} as const satisfies Record<string, { role: "image" | "mask"; description: string }>;
