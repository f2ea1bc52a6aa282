import { describe, expect, it } from "vitest";
import { IMAGE_COUNT_CEILING } from "../limits.ts";
import { FIELD_NAMES, generationRequestJsonSchema, MAX_PROMPT_CHARS, MAX_USER_CHARS, QUALITIES } from "./index.ts";

// The JSON Schema the OpenAPI document takes for POST /v1/images/generations, in process:
// derived from the contract, so its ranges and sets are the checker's. (That the edge's
// answers agree with it over HTTP is services/stack/src/openapi.test.ts.)

type Property = { type?: unknown; anyOf?: Record<string, unknown>[]; [key: string]: unknown };
/** The non-null alternative of an optional field. */
const nonNullAlternative = (property: Property) => property.anyOf?.find((choice) => choice.type !== "null") ?? property;

describe("the request's JSON Schema", () => {
  const schema = generationRequestJsonSchema() as { properties: Record<string, Property>; required: string[]; additionalProperties: boolean };

  it("has every field, model and prompt required, no other field, and no $schema of its own", () => {
    expect(Object.keys(schema.properties)).toEqual(FIELD_NAMES);
    expect(schema.required).toEqual(["model", "prompt"]);
    expect(schema.additionalProperties).toBe(false);
    expect(schema).not.toHaveProperty("$schema");
  });

  it("takes null for each optional field", () => {
    for (const name of FIELD_NAMES.filter((field) => field !== "model" && field !== "prompt")) {
      const property = schema.properties[name]!;
      const types = property.anyOf ? property.anyOf.map((choice) => choice.type) : (property.type as string[]);
      expect(types, name).toContain("null");
    }
  });

  it("states the contract's ranges and sets, the ones generation checks included", () => {
    expect(schema.properties.prompt).toMatchObject({ type: "string", minLength: 1, maxLength: MAX_PROMPT_CHARS });
    expect(nonNullAlternative(schema.properties.n!)).toEqual({ type: "integer", minimum: 1, maximum: IMAGE_COUNT_CEILING });
    expect(nonNullAlternative(schema.properties.output_compression!)).toEqual({ type: "integer", minimum: 0, maximum: 100 });
    expect(nonNullAlternative(schema.properties.user!)).toMatchObject({ type: "string", minLength: 1, maxLength: MAX_USER_CHARS, pattern: "^\\P{Cc}*$" });
    expect(nonNullAlternative(schema.properties.quality!)).toEqual({ type: "string", enum: [...QUALITIES] });
    expect(nonNullAlternative(schema.properties.response_format!)).toEqual({ type: "string", enum: ["url", "b64_json"] });
  });
});
