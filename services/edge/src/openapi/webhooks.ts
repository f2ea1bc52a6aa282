// The webhooks Orvado sends (docs/api.md#webhooks), as OpenAPI 3.1's top-level `webhooks`:
// the body of image.generation.succeeded and image.generation.failed and the Standard
// Webhooks headers each attempt carries. Sent by generation (services/generation/src/webhooks/).

type Json = Record<string, unknown>;

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });

export const WEBHOOK_SCHEMAS: Record<string, Json> = {
  WebhookEvent: {
    type: "object",
    required: ["type", "timestamp", "data"],
    additionalProperties: false,
    properties: {
      type: { type: "string", enum: ["image.generation.succeeded", "image.generation.failed"] },
      timestamp: { type: "string", format: "date-time", description: "When the job ended" },
      data: {
        type: "object",
        required: ["id", "status", "model", "size", "cost"],
        additionalProperties: false,
        properties: {
          id: ref("RequestId"),
          status: { type: "string", enum: ["succeeded", "failed"] },
          model: { type: "string" },
          size: { type: "string", examples: ["1024x1024"] },
          cost: { type: "string", pattern: "^[0-9]+\\.[0-9]{6}$", description: "USD charged, as the cost lookup's amount_usd" },
          images: {
            type: "array",
            description: "Succeeded only: signed links with the images' own expiry",
            items: { type: "object", required: ["url"], additionalProperties: false, properties: { url: { type: "string" } } },
          },
          error: {
            type: "object",
            description: "Failed only",
            required: ["code", "message"],
            additionalProperties: false,
            properties: { code: { type: "string" }, message: { type: "string" } },
          },
        },
      },
    },
  },
};

const header = (description: string, pattern: string) => ({ in: "header", required: true, description, schema: { type: "string", pattern } });

const delivery = (type: string, summary: string): Json => ({
  post: {
    operationId: type.replaceAll(".", "_"),
    tags: ["webhooks"],
    summary,
    description: "Signed with the Standard Webhooks scheme; verify with the `standardwebhooks` package. Answer 2xx within 10 s; otherwise the attempt is retried after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h.",
    parameters: [
      { name: "webhook-id", ...header("The delivery's id, the same on every attempt: de-duplicate by it", "^msg_[0-9a-f]{32}$") },
      { name: "webhook-timestamp", ...header("Unix seconds of this attempt", "^[0-9]+$") },
      { name: "webhook-signature", ...header("`v1,` and the base64 HMAC-SHA256 of `<id>.<timestamp>.<body>`", "^v1,") },
    ],
    requestBody: { required: true, content: { "application/json": { schema: ref("WebhookEvent") } } },
    responses: { "2XX": { description: "Received; anything else (or no answer in 10 s) is a failed attempt" } },
  },
});

export const WEBHOOKS: Json = {
  "image.generation.succeeded": delivery("image.generation.succeeded", "A request finished with its images"),
  "image.generation.failed": delivery("image.generation.failed", "A request failed"),
};
