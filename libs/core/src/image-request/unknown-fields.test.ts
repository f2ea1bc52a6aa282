import { describe, expect, it } from "vitest";
import { ErrorCode } from "@orvado/proto";
import { checkRequestFields, FIELD_NAMES } from "./index.ts";

// Fields outside the contract, in process: refused by name, the supported ones listed.
// Bodies are made with JSON.parse, as Fastify's parser makes them, so "__proto__" is an
// own field as a client sent it.

describe("unknown fields", () => {
  it("are refused, naming the field and listing the supported ones in the contract's order", () => {
    expect(checkRequestFields({ model: "beta", prompt: "x", style: "vivid" })).toEqual({
      ok: false,
      code: ErrorCode.UNKNOWN_FIELD,
      message: 'Unknown field "style"; supported fields: model, prompt, size, quality, response_format, n, user, output_format, output_compression, background, moderation, stream, partial_images',
    });
    expect(FIELD_NAMES).toEqual(["model", "prompt", "size", "quality", "response_format", "n", "user", "output_format", "output_compression", "background", "moderation", "stream", "partial_images"]);
  });

  it("include Object.prototype's names sent as fields, which find nothing of the prototype", () => {
    for (const name of ["__proto__", "constructor", "toString", "hasOwnProperty", "valueOf"]) {
      const body = JSON.parse(`{"model":"beta","prompt":"x",${JSON.stringify(name)}:{"polluted":1}}`);
      expect(checkRequestFields(body), name).toMatchObject({ ok: false, code: ErrorCode.UNKNOWN_FIELD, message: expect.stringMatching(new RegExp(`^Unknown field "${name}"`)) });
    }
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it("cut a long field name to 100 characters in the message", () => {
    const check = checkRequestFields({ model: "beta", prompt: "x", ["z".repeat(5000)]: 1 });
    expect(!check.ok && check.message).toContain(`"${"z".repeat(100)}"`);
    expect(!check.ok && check.message).not.toContain("z".repeat(101));
  });

  it("are those outside a caller's subset (the console playground's)", () => {
    expect(checkRequestFields({ model: "beta", prompt: "x", user: "u" }, ["model", "prompt", "size"])).toEqual({
      ok: false,
      code: ErrorCode.UNKNOWN_FIELD,
      message: 'Unknown field "user"; supported fields: model, prompt, size',
    });
  });
});
