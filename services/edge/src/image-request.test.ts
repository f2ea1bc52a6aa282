import { describe, expect, it } from "vitest";
import { ErrorCode, ResponseFormat } from "@orvado/proto";
import { checkImageRequestBody } from "./image-request.ts";

describe("checkImageRequestBody", () => {
  it("accepts the documented fields and defaults response_format to url", () => {
    const check = checkImageRequestBody({ model: "beta", prompt: "a cat", size: "1024x1024", n: 1, quality: "high" });
    expect(check).toEqual({
      ok: true,
      body: { model: "beta", prompt: "a cat", size: "1024x1024", quality: "high", n: 1, responseFormat: ResponseFormat.URL, user: "", outputFormat: "png" },
    });
  });
  it("reads the OpenAI output fields (docs/api.md)", () => {
    const check = checkImageRequestBody({
      model: "alpha",
      prompt: "x",
      user: "u-1",
      output_format: "webp",
      output_compression: 0,
      background: "transparent",
      moderation: "low",
    });
    expect(check.ok && check.body).toMatchObject({ user: "u-1", outputFormat: "webp", outputCompression: 0, background: "transparent", moderation: "low" });
  });
  it("refuses output fields outside their sets, or that contradict each other", () => {
    for (const fields of [
      { output_format: "jpg" },
      { output_format: "__proto__" },
      { output_format: "png", output_compression: 10 },
      { output_format: "jpeg", output_compression: -1 },
      { output_format: "jpeg", output_compression: "50" },
      { output_format: "jpeg", background: "transparent" },
      { background: "none" },
      { moderation: "high" },
      { user: "" },
      { user: "x".repeat(257) },
      { user: "tab\there" },
      { user: ["a"] },
    ]) {
      expect(checkImageRequestBody({ model: "beta", prompt: "x", ...fields })).toMatchObject({ ok: false, code: ErrorCode.INVALID_FIELD });
    }
  });
  it("reads b64_json", () => {
    const check = checkImageRequestBody({ model: "beta", prompt: "x", response_format: "b64_json" });
    expect(check.ok && check.body.responseFormat).toBe(ResponseFormat.B64_JSON);
  });
  it("needs model and prompt", () => {
    expect(checkImageRequestBody({ prompt: "x" })).toMatchObject({ ok: false, code: ErrorCode.MISSING_FIELD, message: "model is required" });
    expect(checkImageRequestBody({ model: "beta" })).toMatchObject({ ok: false, code: ErrorCode.MISSING_FIELD, message: "prompt is required" });
  });
  it("refuses unknown fields, naming them", () => {
    expect(checkImageRequestBody({ model: "beta", prompt: "x", style: "vivid" })).toMatchObject({
      ok: false,
      code: ErrorCode.UNKNOWN_FIELD,
    });
  });
  it("refuses wrong types", () => {
    for (const body of [
      { model: 1, prompt: "x" },
      { model: "beta", prompt: ["x"] },
      { model: "beta", prompt: "x", n: "2" },
      { model: "beta", prompt: "x", n: 1.5 },
      { model: "beta", prompt: "x", n: -1 },
      { model: "beta", prompt: "x", n: 0 },
      { model: "beta", prompt: "x", n: 1e300 },
      { model: "beta", prompt: "x", size: 1024 },
      { model: "beta", prompt: "x", response_format: "png" },
    ]) {
      expect(checkImageRequestBody(body).ok, JSON.stringify(body)).toBe(false);
    }
  });
  it("refuses bodies that are not objects", () => {
    for (const body of [null, [], "x", 3, undefined]) expect(checkImageRequestBody(body)).toMatchObject({ ok: false, code: ErrorCode.INVALID_REQUEST });
  });
});

describe("checkImageRequestBody and Object.prototype's names", () => {
  it("refuses them as response_format, in any case", () => {
    for (const name of ["constructor", "__proto__", "toString", "hasOwnProperty", "valueOf", "Constructor", "__PROTO__"]) {
      expect(checkImageRequestBody({ model: "beta", prompt: "x", response_format: name }), name).toMatchObject({
        ok: false,
        code: ErrorCode.INVALID_FIELD,
        message: "response_format must be url or b64_json",
      });
    }
  });
});
