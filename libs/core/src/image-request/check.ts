import { ErrorCode } from "@orvado/proto";
import type { z } from "zod";
import { COMBINATION_RULES, GENERATION_FIELDS, imageCount, type FieldName, type FieldValues, type RequestField } from "./fields.ts";

// The contract's checks: the edge's on a client's body (checkRequestFields), and the
// ones generation applies again or once the model is known (checkFieldValues,
// checkCatalogField, checkImageCount). Client names are only ever looked up in Maps
// and Sets: "constructor" or "__proto__" must not find Object.prototype's members.

export type FieldFailure = { ok: false; code: ErrorCode; message: string };
export type FieldsCheck = { ok: true; values: FieldValues } | FieldFailure;
export type ValueCheck<T> = { ok: true; value: T } | FieldFailure;

export const FIELD_RULES: ReadonlyMap<FieldName, RequestField> = new Map(Object.entries(GENERATION_FIELDS) as [FieldName, RequestField][]);
export const FIELD_NAMES: readonly FieldName[] = [...FIELD_RULES.keys()];
/** The same entries as an array: every request walks them, and an array's loop allocates nothing. */
export const FIELD_LIST: readonly (readonly [FieldName, RequestField])[] = [...FIELD_RULES];
const ALL_NAMES: ReadonlySet<string> = new Set(FIELD_NAMES);

const fail = (code: ErrorCode, message: string): FieldFailure => ({ ok: false, code, message });
/** An optional field sent as null counts as absent (docs/api.md#request-body). */
const isAbsent = (value: unknown) => value === undefined || value === null;
const ownValue = (body: object, name: string): unknown => (Object.hasOwn(body, name) ? (body as Record<string, unknown>)[name] : undefined);

/** zod's first issue as a refusal: the field's own message, and invalid_field unless the check names another code. */
function parseValue(schema: z.ZodType, value: unknown): ValueCheck<unknown> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return { ok: true, value: parsed.data };
  const issue = parsed.error.issues[0]!;
  const code = issue.code === "custom" ? (issue.params?.code as ErrorCode | undefined) : undefined;
  return fail(code ?? ErrorCode.INVALID_FIELD, issue.message);
}

/**
 * A client's body (parsed JSON, or an edit's text fields): an object, with no field
 * outside `allowed`, the required ones present, each value within its field's schema and
 * the combination rules kept. The values come back parsed, absent and null ones left out.
 */
export function checkRequestFields(body: unknown, allowed: readonly FieldName[] = FIELD_NAMES): FieldsCheck {
  if (typeof body !== "object" || body === null || Array.isArray(body)) return fail(ErrorCode.INVALID_REQUEST, "The request body must be a JSON object");
  const names = allowed === FIELD_NAMES ? ALL_NAMES : new Set<string>(allowed);
  const unknown = Object.keys(body).find((name) => !names.has(name));
  if (unknown !== undefined) {
    return fail(ErrorCode.UNKNOWN_FIELD, `Unknown field ${JSON.stringify(unknown.slice(0, 100))}; supported fields: ${allowed.join(", ")}`);
  }
  for (const [name, field] of FIELD_LIST) {
    if (field.required && isAbsent(ownValue(body, name))) return fail(ErrorCode.MISSING_FIELD, `${name} is required`);
  }
  return checkValues((name) => ownValue(body, name));
}

/** Each present value against its field's schema, then the combination rules; also generation's check of what arrived over RPC. */
export function checkFieldValues(present: FieldValues): FieldsCheck {
  return checkValues((name) => present[name]);
}

function checkValues(read: (name: FieldName) => unknown): FieldsCheck {
  const values: FieldValues = {};
  for (const [name, field] of FIELD_LIST) {
    const value = read(name);
    if (isAbsent(value)) continue;
    const checked = parseValue(field.schema, value);
    if (!checked.ok) return checked;
    values[name] = checked.value;
  }
  const broken = COMBINATION_RULES.find((rule) => rule.refuses(values));
  return broken ? fail(ErrorCode.INVALID_FIELD, broken.message) : { ok: true, values };
}

/** The whole rule of a field whose checks wait for the model (docs/api.md#order-of-checks); the value comes back normalised. */
export function checkCatalogField<T>(name: "prompt" | "quality", value: T): ValueCheck<T> {
  const field = FIELD_RULES.get(name)!;
  return parseValue(field.catalog ?? field.schema, value) as ValueCheck<T>;
}

/** n (its default when absent) within generation's configured maximum. */
export function checkImageCount(n: number | undefined, max: number): ValueCheck<number> {
  return parseValue(imageCount(max), n ?? GENERATION_FIELDS.n.default) as ValueCheck<number>;
}
