import { describe, expect, it } from "vitest";
import { ErrorCode } from "@orvado/proto";
import { IMAGE_COUNT_CEILING } from "../limits.ts";
import { checkCatalogField, checkFieldValues, checkImageCount, checkRequestFields, MAX_PROMPT_CHARS, MAX_USER_CHARS } from "./index.ts";

// The contract's ranges, in process: checked before the wire (n is a uint32 there), and
// the ones generation applies once the model is known.

const body = (fields: Record<string, unknown>) => ({ model: "beta", prompt: "x", ...fields });

describe("ranges", () => {
  it("holds n to 1..IMAGE_COUNT_CEILING at the edge, 2^32 and 1e300 included, giving the range", () => {
    for (const n of [0, -1, 11, 2 ** 31, 2 ** 32, 2 ** 32 + 1, 2 ** 53, 1e300, -1e300]) {
      const check = checkRequestFields(body({ n }));
      expect(check, String(n)).toMatchObject({ ok: false, code: ErrorCode.INVALID_FIELD });
      expect(!check.ok && check.message).toMatch(new RegExp(`^n must be an integer from 1 to ${IMAGE_COUNT_CEILING}; got `));
    }
    expect(checkRequestFields(body({ n: IMAGE_COUNT_CEILING }))).toMatchObject({ ok: true, values: { n: IMAGE_COUNT_CEILING } });
  });

  it("names a refused n of another type without spelling it out, however deeply it nests", () => {
    let deep: unknown = 1;
    for (let depth = 0; depth < 200_000; depth += 1) deep = [deep];
    expect(checkRequestFields(body({ n: deep }))).toEqual({ ok: false, code: ErrorCode.INVALID_FIELD, message: `n must be an integer from 1 to ${IMAGE_COUNT_CEILING}; got an array` });
    expect(checkRequestFields(body({ n: { a: 1 } }))).toMatchObject({ message: expect.stringMatching(/; got an object$/) });
    expect(checkRequestFields(body({ n: "x".repeat(100) }))).toMatchObject({ message: `n must be an integer from 1 to ${IMAGE_COUNT_CEILING}; got "${"x".repeat(39)}` });
  });

  it("holds n to generation's configured maximum, and reads an absent n as 1", () => {
    expect(checkImageCount(5, 4)).toEqual({ ok: false, code: ErrorCode.INVALID_FIELD, message: "n must be an integer from 1 to 4; got 5" });
    expect(checkImageCount(4, 4)).toEqual({ ok: true, value: 4 });
    expect(checkImageCount(undefined, 4)).toEqual({ ok: true, value: 1 });
  });

  it("holds output_compression to 0..100", () => {
    for (const output_compression of [-1, 101, 1e300]) {
      expect(checkRequestFields(body({ output_format: "jpeg", output_compression }))).toEqual({ ok: false, code: ErrorCode.INVALID_FIELD, message: "output_compression must be an integer from 0 to 100" });
    }
    for (const output_compression of [0, 100]) expect(checkRequestFields(body({ output_format: "webp", output_compression })).ok).toBe(true);
  });

  it("holds user to 1..256 characters without control characters, at the edge and over RPC alike", () => {
    const message = `user must be a string of 1 to ${MAX_USER_CHARS} characters without control characters`;
    for (const user of ["", "u".repeat(MAX_USER_CHARS + 1), "tab\there", "line\nbreak", "bell\u0007", "c1\u0085", 7, ["a"]]) {
      expect(checkRequestFields(body({ user })), JSON.stringify(user)).toEqual({ ok: false, code: ErrorCode.INVALID_FIELD, message });
      if (typeof user === "string" && user !== "") expect(checkFieldValues({ user })).toEqual({ ok: false, code: ErrorCode.INVALID_FIELD, message });
    }
    expect(checkRequestFields(body({ user: "u".repeat(MAX_USER_CHARS) })).ok).toBe(true);
  });

  it("holds prompt, once the model is known, to non-blank text of at most 32 000 characters", () => {
    for (const prompt of ["", " ", "\n\t"]) expect(checkCatalogField("prompt", prompt)).toEqual({ ok: false, code: ErrorCode.MISSING_FIELD, message: "prompt must not be empty" });
    expect(checkCatalogField("prompt", "x".repeat(MAX_PROMPT_CHARS + 1))).toEqual({ ok: false, code: ErrorCode.INVALID_FIELD, message: "prompt is longer than 32000 characters" });
    expect(checkCatalogField("prompt", "x".repeat(MAX_PROMPT_CHARS))).toEqual({ ok: true, value: "x".repeat(MAX_PROMPT_CHARS) });
  });
});
