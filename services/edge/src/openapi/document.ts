import { ErrorCode } from "@orvado/proto";
import { codeText, httpStatusFor } from "@orvado/core";
import { editRequestJsonSchema, generationRequestJsonSchema } from "@orvado/core/image-request";
import { WEBHOOK_SCHEMAS, WEBHOOKS } from "./webhooks.ts";

// The OpenAPI 3.1 document of the public HTTP API, in this one file: served at
// /openapi.json, browsable at /docs, and every response of the end-to-end suites is
// validated against it (services/stack/src/openapi-validation.ts). docs/api.md says
// the same in prose; the error codes and their statuses come from libs/core's one table,
// and the request bodies from the request's contract (libs/core/src/image-request).
// Plain objects: services/stack/src/openapi.test.ts validates the document as OpenAPI 3.1.

type Json = Record<string, unknown>;
type Schema = Json;

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
type Headers = Record<string, Json>;

const REQUEST_ID_HEADER: Headers = {
  "X-Gateway-Request-Id": { $ref: "#/components/headers/RequestId" },
  "x-request-id": { $ref: "#/components/headers/RequestId" },
};
const RETRY_AFTER = { description: "Seconds to wait before trying again", schema: { type: "string", pattern: "^[0-9]+$" } };
const RETRY_HEADERS: Headers = {
  "Retry-After": RETRY_AFTER,
  "x-should-retry": { description: "true when the same request may succeed later (502, 503)", schema: { type: "string", enum: ["true", "false"] } },
};

/** Every code a client can receive, with its status (libs/core/src/errors.ts). */
export const PUBLIC_ERROR_CODES = Object.values(ErrorCode).filter(
  (code): code is ErrorCode => typeof code === "number" && code !== ErrorCode.UNSPECIFIED,
);

/** The error responses of an operation: one per status, naming the codes that answer with it. */
function errors(...codes: ErrorCode[]): Record<string, Json> {
  const byStatus = new Map<number, string[]>();
  for (const code of codes) byStatus.set(httpStatusFor(code), [...(byStatus.get(httpStatusFor(code)) ?? []), codeText(code)]);
  return Object.fromEntries(
    [...byStatus].map(([status, names]) => [
      String(status),
      {
        description: names.map((name) => `\`${name}\``).join(", "),
        headers: { ...REQUEST_ID_HEADER, ...(status === 429 || status >= 502 ? RETRY_HEADERS : {}) },
        content: { "application/json": { schema: ref("Error") } },
      },
    ]),
  );
}

/** What any route may answer: a service behind the edge is briefly unreachable, or a bug. */
const ANY_ROUTE = [ErrorCode.SERVICE_UNAVAILABLE, ErrorCode.INTERNAL_ERROR];
/** What Fastify refuses before a route with a body runs (bad JSON, media type, size, slow arrival). */
const BODY_ROUTE = [ErrorCode.INVALID_REQUEST, ErrorCode.INVALID_JSON, ErrorCode.BODY_TOO_LARGE, ErrorCode.UNSUPPORTED_MEDIA_TYPE];
const KEY = [ErrorCode.MISSING_API_KEY, ErrorCode.INVALID_API_KEY];
const IMAGE_REQUEST = [
  ErrorCode.MISSING_FIELD,
  ErrorCode.UNKNOWN_FIELD,
  ErrorCode.INVALID_FIELD,
  ErrorCode.UNKNOWN_MODEL,
  ErrorCode.INVALID_SIZE,
  ErrorCode.TIER_NOT_OFFERED,
  ErrorCode.INSUFFICIENT_USER_QUOTA,
  ErrorCode.MODEL_NOT_ALLOWED,
  ErrorCode.IDEMPOTENCY_KEY_REUSED,
  ErrorCode.LINK_EXPIRED,
  ErrorCode.RATE_LIMIT_EXCEEDED,
  ErrorCode.CONCURRENT_JOB_LIMIT,
  ErrorCode.ASYNC_IMAGE_FAILED,
  ErrorCode.JOB_OUTCOME_UNKNOWN,
  ErrorCode.NO_CAPACITY,
];

const json = (schema: Schema, description: string, headers: Headers = {}): Json => ({
  description,
  headers: { ...REQUEST_ID_HEADER, ...headers },
  content: { "application/json": { schema } },
});

const IDEMPOTENCY_KEY_PARAMETER: Json = {
  name: "Idempotency-Key",
  in: "header",
  required: false,
  schema: { type: "string", pattern: "^[\\x21-\\x7E]{1,255}$" },
  description: "A retry with the same key and body answers as the original (24 h)",
};

/** `Prefer: respond-async` on both image POSTs (docs/api.md#async-submit, RFC 7240). */
const PREFER_PARAMETER: Json = {
  name: "Prefer",
  in: "header",
  required: false,
  schema: { type: "string" },
  description: "RFC 7240 preferences; `respond-async` answers 202 as soon as the job runs, with its lookup in `Location`. Other preferences are ignored",
};

/** The 202 of an async submit: the lookup's running body, where to poll, and the applied preference. */
const SUBMITTED = json(ref("JobRunning"), "`Prefer: respond-async`: the job runs; poll `Location` (the request lookup). An idempotent retry of a running request answers its original's, with `Idempotent-Replayed: true`", {
  Location: { required: true, description: "The request lookup, `/v1/images/generations/<request_id>`", schema: { type: "string", pattern: "^/v1/images/generations/req_[A-Za-z0-9_-]{22}$" } },
  "Preference-Applied": { required: true, schema: { const: "respond-async" } },
  "Retry-After": RETRY_AFTER,
});

const schemas: Record<string, Schema> = {
  Error: {
    type: "object",
    required: ["error"],
    additionalProperties: false,
    properties: {
      error: {
        type: "object",
        required: ["message", "type", "code"],
        additionalProperties: false,
        properties: {
          message: { type: "string", pattern: "\\(request id: req_[A-Za-z0-9_-]{22}\\)$", description: "Ends with `(request id: <id>)`" },
          type: { const: "gateway_error" },
          code: { type: "string", enum: PUBLIC_ERROR_CODES.map(codeText) },
        },
      },
    },
  },
  ImageGenerationRequest: generationRequestJsonSchema(),
  ImageEditRequest: editRequestJsonSchema(),
  ImagesResponse: {
    type: "object",
    required: ["created", "data"],
    additionalProperties: false,
    properties: {
      created: { type: "integer", description: "Unix seconds, when the job finished" },
      data: { type: "array", minItems: 1, items: ref("Image") },
    },
  },
  Image: {
    oneOf: [
      { type: "object", required: ["url"], additionalProperties: false, properties: { url: { type: "string", pattern: "^https?://[^ ]+/v1/files/img_[A-Za-z0-9_-]+\\.(png|jpeg|webp)\\?expires=[0-9]+&sig=[A-Za-z0-9_-]+$" } } },
      { type: "object", required: ["b64_json"], additionalProperties: false, properties: { b64_json: { type: "string", pattern: "^[A-Za-z0-9+/]*={0,2}$", description: "The image in base64" } } },
    ],
  },
  ImageLinks: {
    type: "object",
    required: ["created", "data"],
    additionalProperties: false,
    description: "A finished job's images, always as links",
    properties: {
      created: { type: "integer" },
      data: { type: "array", items: { type: "object", required: ["url"], additionalProperties: false, properties: { url: { type: "string" } } } },
    },
  },
  JobRunning: {
    type: "object",
    required: ["id", "object", "status", "created"],
    additionalProperties: false,
    properties: {
      id: ref("RequestId"),
      object: { const: "image.generation" },
      status: { const: "running" },
      created: { type: "integer" },
      progress: { type: "number", minimum: 0, maximum: 1, description: "How far the job is, when its upstream reports it" },
      preview_url: { type: "string", description: "A signed link to the job's newest preview render, when its upstream made one" },
    },
  },
  RequestId: { type: "string", pattern: "^req_[A-Za-z0-9_-]{22}$" },
  Model: {
    type: "object",
    required: ["id", "object", "created", "owned_by", "aliases", "family", "tiers", "edits", "sandbox", "channels"],
    additionalProperties: false,
    properties: {
      id: { type: "string" },
      object: { const: "model" },
      created: { type: "integer" },
      owned_by: { type: "string", enum: ["orvado", "orvado-sandbox"] },
      aliases: { type: "array", items: { type: "string" }, description: "Other names that run this model; GET /v1/models/{alias} answers with this model" },
      family: { type: "string", enum: ["alpha", "beta"] },
      tiers: { type: "array", items: { type: "string", enum: ["1K", "2K", "4K"] } },
      edits: { type: "boolean", description: "Whether POST /v1/images/edits takes this model" },
      sandbox: { type: "boolean" },
      note: { type: "string" },
      channels: {
        type: "array",
        items: {
          type: "object",
          required: ["name", "provider", "healthy"],
          additionalProperties: false,
          properties: { name: { type: "string" }, provider: { type: "string" }, healthy: { type: "boolean" } },
        },
      },
    },
  },
  ModelList: {
    type: "object",
    required: ["object", "data"],
    additionalProperties: false,
    properties: { object: { const: "list" }, data: { type: "array", items: ref("Model") } },
  },
  CostRecord: {
    type: "object",
    additionalProperties: false,
    required: [
      "request_id", "status", "model", "size", "tier", "images_requested", "images_delivered", "currency",
      "unit_price_usd", "unit_price_micros", "amount_usd", "amount_micros", "created_at", "settled_at",
    ],
    properties: {
      request_id: ref("RequestId"),
      status: { type: "string", enum: ["pending", "charged", "not_charged"] },
      model: { type: "string" },
      size: { type: "string" },
      tier: { type: "string", enum: ["1K", "2K", "4K"] },
      images_requested: { type: "integer", minimum: 1 },
      images_delivered: { type: "integer", minimum: 0 },
      currency: { const: "USD" },
      unit_price_usd: { type: "string", pattern: "^[0-9]+\\.[0-9]{6}$" },
      unit_price_micros: { type: "integer", minimum: 0 },
      amount_usd: { type: "string", pattern: "^[0-9]+\\.[0-9]{6}$", description: "What was charged; 0 until settled and for a failure" },
      amount_micros: { type: "integer", minimum: 0 },
      created_at: { type: "string", format: "date-time" },
      settled_at: { anyOf: [{ type: "string", format: "date-time" }, { type: "null" }] },
    },
  },
};

/** `stream: true` (docs/api.md#streaming): server-sent events in OpenAI's shapes. */
const eventStream = (kind: "image_generation" | "image_edit") => ({
  schema: {
    type: "string",
    description:
      `Server-sent events: \`${kind}.partial_image\` (up to partial_images of them), then one \`${kind}.completed\` per image (b64_json, created_at, size, quality, ` +
      "background, output_format, usage), or an `error` event (`{\"type\":\"error\",\"error\":{message,type,code}}`) if the job fails after the stream began; " +
      "a `: keep-alive` comment line every EDGE_STREAM_HEARTBEAT_MS",
  },
});

/** The 200 of an images POST: JSON, or the event stream when the body asked for `stream`. */
const imagesAnswer = (description: string, kind: "image_generation" | "image_edit"): Json => {
  const answer = json(ref("ImagesResponse"), `${description}; with \`stream: true\`, text/event-stream`);
  return { ...answer, content: { ...(answer.content as Json), "text/event-stream": eventStream(kind) } };
};

const imageFile = { description: "The image, binary", content: Object.fromEntries(["image/png", "image/jpeg", "image/webp"].map((type) => [type, {}])) };

const paths: Record<string, Json> = {
  "/v1/images/generations": {
    post: {
      operationId: "createImage",
      tags: ["images"],
      summary: "Create images from a prompt; synchronous, up to 10 minutes, or 202 at once with `Prefer: respond-async`",
      security: [{ bearer: [] }],
      parameters: [IDEMPOTENCY_KEY_PARAMETER, PREFER_PARAMETER],
      requestBody: { required: true, content: { "application/json": { schema: ref("ImageGenerationRequest") } } },
      responses: {
        "200": imagesAnswer("The images; `Idempotent-Replayed: true` on an idempotent retry", "image_generation"),
        "202": SUBMITTED,
        ...errors(...BODY_ROUTE, ...KEY, ...IMAGE_REQUEST, ...ANY_ROUTE),
      },
    },
  },
  "/v1/images/generations/{request_id}": {
    get: {
      operationId: "getImageGeneration",
      tags: ["images"],
      summary: "The state or stored result of one of the account's requests",
      security: [{ bearer: [] }],
      parameters: [{ name: "request_id", in: "path", required: true, schema: { type: "string" } }],
      responses: {
        "200": json(ref("ImageLinks"), "The job finished with images"),
        "202": json(ref("JobRunning"), "The job is still running", { "Retry-After": RETRY_AFTER }),
        ...errors(...KEY, ErrorCode.NOT_FOUND, ErrorCode.LINK_EXPIRED, ErrorCode.ASYNC_IMAGE_FAILED, ErrorCode.INVALID_FIELD, ...ANY_ROUTE),
      },
    },
  },
  "/v1/images/edits": {
    post: {
      operationId: "createImageEdit",
      tags: ["images"],
      summary: "Edit images (multipart); a model that does not edit answers 400 edits_not_available",
      security: [{ bearer: [] }],
      parameters: [IDEMPOTENCY_KEY_PARAMETER, PREFER_PARAMETER],
      requestBody: { required: true, content: { "multipart/form-data": { schema: ref("ImageEditRequest") } } },
      responses: {
        "200": imagesAnswer("The edited images", "image_edit"),
        "202": SUBMITTED,
        ...errors(...BODY_ROUTE, ErrorCode.EDITS_NOT_AVAILABLE, ...KEY, ...IMAGE_REQUEST, ...ANY_ROUTE),
      },
    },
  },
  "/v1/models": {
    get: {
      operationId: "listModels",
      tags: ["models"],
      summary: "The model catalog in OpenAI's list shape",
      responses: { "200": json(ref("ModelList"), "Every model"), ...errors(...ANY_ROUTE) },
    },
  },
  "/v1/models/{model}": {
    get: {
      operationId: "retrieveModel",
      tags: ["models"],
      summary: "One model (the openai SDK's models.retrieve)",
      parameters: [{ name: "model", in: "path", required: true, schema: { type: "string" } }],
      responses: { "200": json(ref("Model"), "The model"), ...errors(ErrorCode.NOT_FOUND, ...ANY_ROUTE) },
    },
  },
  "/api/cost/request/{request_id}": {
    get: {
      operationId: "getCost",
      tags: ["cost"],
      summary: "The cost record of a request; no key needed, limited per client address",
      parameters: [{ name: "request_id", in: "path", required: true, schema: { type: "string" } }],
      responses: { "200": json(ref("CostRecord"), "The cost record"), ...errors(ErrorCode.NOT_FOUND, ErrorCode.TOO_MANY_ATTEMPTS, ...ANY_ROUTE) },
    },
  },
  "/v1/files/{file}": {
    get: {
      operationId: "getImageFile",
      tags: ["images"],
      summary: "An image by its signed, expiring link (`<image id>.<png|jpeg|webp>`)",
      parameters: [
        { name: "file", in: "path", required: true, schema: { type: "string", pattern: "^img_[A-Za-z0-9_-]+\\.(png|jpeg|webp)$" } },
        { name: "expires", in: "query", required: true, schema: { type: "string", pattern: "^[0-9]+$" } },
        { name: "sig", in: "query", required: true, schema: { type: "string" } },
      ],
      responses: {
        "200": { ...imageFile, headers: REQUEST_ID_HEADER },
        ...errors(ErrorCode.NOT_FOUND, ErrorCode.LINK_EXPIRED, ErrorCode.INVALID_REQUEST, ...ANY_ROUTE),
      },
    },
  },
  "/healthz": {
    get: {
      operationId: "health",
      tags: ["operations"],
      summary: "Edge liveness",
      responses: { "200": json({ type: "object", required: ["status"], properties: { status: { const: "ok" } } }, "The edge is up") },
    },
  },
  "/metrics": {
    get: {
      operationId: "metrics",
      tags: ["operations"],
      summary: "Prometheus metrics of the edge and of generation",
      responses: { "200": { description: "Prometheus text exposition", headers: REQUEST_ID_HEADER, content: { "text/plain": { schema: { type: "string" } } } }, ...errors(...ANY_ROUTE) },
    },
  },
  "/": {
    get: {
      operationId: "root",
      tags: ["operations"],
      summary: "A browser (Accept: text/html) is sent to the console; API clients get 404",
      responses: { "302": { description: "To /console", headers: { ...REQUEST_ID_HEADER, Location: { schema: { const: "/console" } } } }, ...errors(ErrorCode.NOT_FOUND) },
    },
  },
  "/docs": {
    get: {
      operationId: "docs",
      tags: ["operations"],
      summary: "This document in a browser (Swagger UI, served from this origin)",
      responses: { "200": { description: "The viewer page", headers: REQUEST_ID_HEADER, content: { "text/html": { schema: { type: "string" } } } }, "304": { description: "Not modified (ETag)" } },
    },
  },
  "/docs/{file}": {
    get: {
      operationId: "docsFile",
      tags: ["operations"],
      summary: "The viewer's files",
      parameters: [{ name: "file", in: "path", required: true, schema: { type: "string" } }],
      responses: {
        "200": { description: "A script, stylesheet or icon", headers: REQUEST_ID_HEADER, content: { "text/javascript": {}, "text/css": {}, "image/png": {} } },
        "304": { description: "Not modified (ETag)" },
        ...errors(ErrorCode.NOT_FOUND),
      },
    },
  },
  "/openapi.json": {
    get: { operationId: "openapi", tags: ["operations"], summary: "This document", responses: { "200": json({ type: "object", required: ["openapi"] }, "OpenAPI 3.1") } },
  },
};

const errorTable = PUBLIC_ERROR_CODES.map((code) => `| \`${codeText(code)}\` | ${httpStatusFor(code)} |`).join("\n");

export interface OpenApiDocument extends Json {
  paths: Record<string, Json>;
  info: Json & { description: string };
  components: Json & { schemas: Record<string, Schema> };
}

export const OPENAPI_DOCUMENT: OpenApiDocument = {
  openapi: "3.1.0",
  jsonSchemaDialect: "https://spec.openapis.org/oas/3.1/dialect/base",
  info: {
    title: "Orvado image generation API",
    version: "1.0",
    summary: "OpenAI-compatible image generation billed in USD from a prepaid balance",
    description:
      "Point an OpenAI SDK at `<base>/v1`. Every response carries `X-Gateway-Request-Id`; every error has the body " +
      "`{error: {message, type: \"gateway_error\", code}}`. docs/api.md describes each field and rule.\n\n" +
      `| Error code | HTTP status |\n|---|---|\n${errorTable}`,
  },
  servers: [{ url: "/" }],
  tags: [
    { name: "images", description: "Generate and edit images, look up a request, download files" },
    { name: "models", description: "The model catalog" },
    { name: "cost", description: "What a request cost" },
    { name: "operations", description: "Liveness, metrics, this document" },
    { name: "webhooks", description: "What Orvado POSTs to an account's webhook endpoints" },
  ],
  components: {
    securitySchemes: { bearer: { type: "http", scheme: "bearer", description: "An API key `td-…` from the console's Tokens page" } },
    headers: { RequestId: { description: "This request's id, for the cost lookup or support", required: true, schema: ref("RequestId") } },
    schemas: { ...schemas, ...WEBHOOK_SCHEMAS },
  },
  paths,
  webhooks: WEBHOOKS,
};
