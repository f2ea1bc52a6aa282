import { describe, expect, it } from "vitest";
import { BOOLEAN_FIELDS, EDIT_FILE_FIELDS, editRequestJsonSchema, FIELD_NAMES, INTEGER_FIELDS } from "./index.ts";

// The fields of POST /v1/images/edits (multipart/form-data), in process: the file parts,
// the text fields the edge reads as integers, and the edit's JSON Schema.

describe("edit multipart fields", () => {
  it("are the files image, image[] (images) and mask", () => {
    expect(Object.entries(EDIT_FILE_FIELDS).map(([name, field]) => [name, field.role])).toEqual([["image", "image"], ["image[]", "image"], ["mask", "mask"]]);
  });

  it("read n, output_compression and partial_images as integers: the fields whose schema is an integer", () => {
    expect([...INTEGER_FIELDS]).toEqual(["n", "output_compression", "partial_images"]);
  });

  it("read stream as a boolean (the text true or false): the fields whose schema is a boolean", () => {
    expect([...BOOLEAN_FIELDS]).toEqual(["stream"]);
  });

  it("are documented with every text field of a generation, at least one image, and nothing else", () => {
    const schema = editRequestJsonSchema() as { properties: Record<string, unknown>; required: string[]; anyOf: unknown[]; additionalProperties: boolean };
    expect(Object.keys(schema.properties)).toEqual(["image", "image[]", "mask", ...FIELD_NAMES]);
    expect(schema.required).toEqual(["model", "prompt"]);
    expect(schema.anyOf).toEqual([{ required: ["image"] }, { required: ["image[]"] }]);
    expect(schema.additionalProperties).toBe(false);
    expect(schema.properties.mask).toMatchObject({ type: "string", contentMediaType: "application/octet-stream" });
  });
});
