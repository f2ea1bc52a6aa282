import { describe, expect, it } from "vitest";
import { ResponseFormat } from "@orvado/proto";
import { checkImageRequestBody, DEFAULT_IMAGE_COUNT, DEFAULT_OUTPUT_COMPRESSION, DEFAULT_SIZE, GENERATION_FIELDS, generationRequestJsonSchema } from "./index.ts";

// The contract's defaults, in process: what the edge puts on the wire for an absent
// field, and the defaults the document states (generation applies size, n and
// output_compression's itself: sizes.ts, validate.ts, output-format.ts).

describe("defaults", () => {
  it("sends response_format url, output_format png and an empty user for absent fields, and nothing for the others", () => {
    expect(checkImageRequestBody({ model: "beta", prompt: "a cat" })).toEqual({
      ok: true,
      body: { model: "beta", prompt: "a cat", responseFormat: ResponseFormat.URL, user: "", outputFormat: "png" },
      stream: false,
    });
  });

  it("are the documented ones (docs/api.md#request-body)", () => {
    expect([DEFAULT_SIZE, DEFAULT_IMAGE_COUNT, DEFAULT_OUTPUT_COMPRESSION]).toEqual(["1024x1024", 1, 100]);
    const defaults = Object.fromEntries(Object.entries(GENERATION_FIELDS).flatMap(([name, field]) => ("default" in field ? [[name, field.default]] : [])));
    expect(defaults).toEqual({ size: "1024x1024", response_format: "url", n: 1, output_format: "png", output_compression: 100, stream: false, partial_images: 0 });
  });

  it("are stated in the JSON Schema of the request", () => {
    const properties = generationRequestJsonSchema().properties as Record<string, { default?: unknown }>;
    for (const [name, field] of Object.entries(GENERATION_FIELDS)) expect(properties[name]!.default, name).toEqual("default" in field ? field.default : undefined);
  });
});
