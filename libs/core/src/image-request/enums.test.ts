import { describe, expect, it } from "vitest";
import { ErrorCode } from "@orvado/proto";
import { BACKGROUNDS, checkCatalogField, checkFieldValues, checkRequestFields, MODERATIONS, OUTPUT_FORMATS, QUALITIES } from "./index.ts";

// The contract's closed sets and the rules between fields, in process. Object.prototype's
// names must be refused like any other value outside a set (docs/api.md#request-body).

const PROTOTYPE_NAMES = ["constructor", "__proto__", "toString", "hasOwnProperty", "valueOf", "Constructor", "__PROTO__", "isPrototypeOf"];
const body = (fields: Record<string, unknown>) => ({ model: "beta", prompt: "x", ...fields });

describe("enums", () => {
  const sets = [
    ["response_format", ["url", "b64_json"], "response_format must be url or b64_json"],
    ["output_format", OUTPUT_FORMATS, "output_format must be one of png, jpeg, webp"],
    ["background", BACKGROUNDS, "background must be one of transparent, opaque, auto"],
    ["moderation", MODERATIONS, "moderation must be one of low, auto"],
  ] as const;

  it("accepts each value of each set and refuses others, prototype names and other types included", () => {
    for (const [name, values, message] of sets) {
      for (const value of values) expect(checkRequestFields(body({ [name]: value, ...(value === "transparent" && { output_format: "png" }) })).ok, `${name} ${value}`).toBe(true);
      for (const value of [...PROTOTYPE_NAMES, "", "PNG", "jpg", 1, ["url"]]) {
        expect(checkRequestFields(body({ [name]: value })), `${name} ${String(value)}`).toEqual({ ok: false, code: ErrorCode.INVALID_FIELD, message });
      }
    }
  });

  it("checks quality once the model is known, in any case, passing the lower-case value on", () => {
    for (const quality of QUALITIES) expect(checkCatalogField("quality", quality.toUpperCase())).toEqual({ ok: true, value: quality });
    for (const quality of [...PROTOTYPE_NAMES, "ultra", ""]) {
      expect(checkCatalogField("quality", quality), quality).toEqual({ ok: false, code: ErrorCode.INVALID_FIELD, message: "quality must be one of low, medium, high, xhigh, max, auto" });
    }
  });

  it("refuses output_compression with png, also when output_format is absent", () => {
    const message = "output_compression applies to output_format jpeg or webp only, not png";
    expect(checkRequestFields(body({ output_compression: 50 }))).toEqual({ ok: false, code: ErrorCode.INVALID_FIELD, message });
    expect(checkFieldValues({ output_format: "png", output_compression: 50 })).toEqual({ ok: false, code: ErrorCode.INVALID_FIELD, message });
  });

  it("refuses a transparent background with jpeg, which has no alpha", () => {
    const message = "background transparent needs output_format png or webp; jpeg has no transparency";
    expect(checkRequestFields(body({ output_format: "jpeg", background: "transparent" }))).toEqual({ ok: false, code: ErrorCode.INVALID_FIELD, message });
    expect(checkFieldValues({ output_format: "jpeg", background: "transparent" })).toEqual({ ok: false, code: ErrorCode.INVALID_FIELD, message });
    expect(checkFieldValues({ output_format: "webp", background: "transparent" }).ok).toBe(true);
  });
});
