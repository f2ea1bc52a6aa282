import { describe, expect, it } from "vitest";
import { ErrorCode, ResponseFormat } from "@orvado/proto";
import { checkImageRequestBody, checkRequestFields } from "./index.ts";

// The contract's type rules, in process (no transport): a client's parsed body as the
// edge receives it from Fastify's JSON parser or an edit's multipart text fields.

const body = (fields: Record<string, unknown>) => ({ model: "beta", prompt: "x", ...fields });

describe("types", () => {
  it("refuses a body that is not an object", () => {
    for (const value of [null, [], "x", 3, undefined, true]) {
      expect(checkRequestFields(value)).toEqual({ ok: false, code: ErrorCode.INVALID_REQUEST, message: "The request body must be a JSON object" });
    }
  });

  it("needs model and prompt, null counting as absent", () => {
    expect(checkRequestFields({ prompt: "x" })).toEqual({ ok: false, code: ErrorCode.MISSING_FIELD, message: "model is required" });
    expect(checkRequestFields({ model: "beta", prompt: null })).toEqual({ ok: false, code: ErrorCode.MISSING_FIELD, message: "prompt is required" });
  });

  it("refuses a string field of another type, naming it", () => {
    for (const name of ["model", "prompt", "size", "quality"]) {
      for (const value of [1, true, ["x"], { a: 1 }]) {
        expect(checkRequestFields(body({ [name]: value }))).toEqual({ ok: false, code: ErrorCode.INVALID_FIELD, message: `${name} must be a string` });
      }
    }
  });

  it("refuses an integer field sent as a string or a fraction", () => {
    for (const [name, value] of [["n", "2"], ["n", 1.5], ["n", true], ["output_compression", "50"], ["output_compression", 1.5]] as const) {
      expect(checkRequestFields(body({ [name]: value, output_format: "jpeg" })), `${name} ${value}`).toMatchObject({ ok: false, code: ErrorCode.INVALID_FIELD });
    }
  });

  it("treats null in an optional field as absent", () => {
    const nulls = { size: null, quality: null, response_format: null, n: null, user: null, output_format: null, output_compression: null, background: null, moderation: null };
    expect(checkRequestFields(body(nulls))).toEqual({ ok: true, values: { model: "beta", prompt: "x" } });
  });

  it("puts each field under its CreateImageRequest name, response_format as the enum", () => {
    const check = checkImageRequestBody(
      body({ size: "2k", quality: "high", response_format: "b64_json", n: 2, user: "u-1", output_format: "webp", output_compression: 0, background: "opaque", moderation: "low", stream: true, partial_images: 2 }),
    );
    expect(check).toEqual({
      ok: true,
      body: {
        model: "beta",
        prompt: "x",
        size: "2k",
        quality: "high",
        responseFormat: ResponseFormat.B64_JSON,
        n: 2,
        user: "u-1",
        outputFormat: "webp",
        outputCompression: 0,
        background: "opaque",
        moderation: "low",
        partialImages: 2,
      },
      // stream is the edge's: it picks StreamImage, and travels in no field.
      stream: true,
    });
  });

  it("takes stream as a boolean and partial_images from 0 to 3", () => {
    expect(checkRequestFields(body({ stream: false, partial_images: 0 }))).toMatchObject({ ok: true, values: { stream: false, partial_images: 0 } });
    for (const stream of ["true", 1, []]) {
      expect(checkRequestFields(body({ stream }))).toEqual({ ok: false, code: ErrorCode.INVALID_FIELD, message: "stream must be true or false" });
    }
    for (const partialImages of [-1, 4, 1.5, "2"]) {
      expect(checkRequestFields(body({ partial_images: partialImages }))).toEqual({ ok: false, code: ErrorCode.INVALID_FIELD, message: "partial_images must be an integer from 0 to 3" });
    }
  });
});
