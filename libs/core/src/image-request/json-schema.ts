import { z } from "zod";
import { EDIT_FILE_FIELDS, GENERATION_FIELDS, type RequestField } from "./fields.ts";

// The request bodies of the OpenAPI document (services/edge/src/openapi/document.ts),
// derived from the contract with zod's JSON Schema output (2020-12, as OpenAPI 3.1 uses):
// each field's whole rule (`catalog` where generation checks more than the edge), null
// allowed for an optional field (it counts as absent), its default and description.

type JsonSchema = Record<string, unknown>;

function fieldSchema(field: RequestField): z.ZodType {
  const rule = field.catalog ?? field.schema;
  const schema = field.required ? rule : rule.nullable().optional();
  const { description, default: absent, examples } = field;
  return schema.meta({ ...(description !== undefined && { description }), ...(absent !== undefined && { default: absent }), ...(examples && { examples: [...examples] }) });
}

const textFields = (): Record<string, z.ZodType> => Object.fromEntries(Object.entries(GENERATION_FIELDS).map(([name, field]) => [name, fieldSchema(field)]));

/** A file part; OpenAPI 3.1 marks binary content with contentMediaType. */
const file = () => z.string().meta({ contentMediaType: "application/octet-stream" });
/** The openai SDK sends one image as `image` and a list as `image[]`; a mask is one file. */
const filePart = (name: string, role: "image" | "mask") => (role === "mask" ? file() : name === "image" ? z.union([file(), z.array(file())]) : z.array(file()));
const fileFields = (): Record<string, z.ZodType> =>
  Object.fromEntries(Object.entries(EDIT_FILE_FIELDS).map(([name, { role, description }]) => [name, filePart(name, role).optional().meta({ description })]));

function jsonSchemaOf(schema: z.ZodType): JsonSchema {
  // io "output": a field's whole rule is what it accepts once normalised (quality in lower case).
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, { target: "draft-2020-12", io: "output" }) as JsonSchema;
  return rest;
}

/** POST /v1/images/generations, application/json. */
export function generationRequestJsonSchema(): JsonSchema {
  return jsonSchemaOf(z.strictObject(textFields()));
}

/** POST /v1/images/edits, multipart/form-data: the files, at least one image, and the text fields of a generation. */
export function editRequestJsonSchema(): JsonSchema {
  const images = Object.entries(EDIT_FILE_FIELDS).filter(([, field]) => field.role === "image").map(([name]) => ({ required: [name] }));
  return { ...jsonSchemaOf(z.strictObject({ ...fileFields(), ...textFields() })), anyOf: images };
}

/** Text fields a JSON body carries as integers; multipart carries every field as text, which the edge reads in plain digits. */
export const INTEGER_FIELDS: ReadonlySet<string> = new Set(
  Object.entries(GENERATION_FIELDS)
    .filter(([, field]) => jsonSchemaOf(field.schema).type === "integer")
    .map(([name]) => name),
);

/** Text fields a JSON body carries as booleans; multipart carries them as the text "true" or "false". */
export const BOOLEAN_FIELDS: ReadonlySet<string> = new Set(
  Object.entries(GENERATION_FIELDS)
    .filter(([, field]) => jsonSchemaOf(field.schema).type === "boolean")
    .map(([name]) => name),
);
