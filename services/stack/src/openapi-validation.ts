import { Ajv2020 } from "ajv/dist/2020.js";
import type { ValidateFunction } from "ajv";
import { OPENAPI_DOCUMENT } from "@orvado/edge/openapi";

// Every response an end-to-end suite receives, checked against the OpenAPI document
// (services/edge/src/openapi/document.ts) by path, method and status: the status must
// be documented for the operation, the content type must be one it lists, a JSON body
// must match its schema (JSON Schema 2020-12, as OpenAPI 3.1 uses), and the headers it
// marks required must be present. A path or method the document does not have must be
// the 404 `not_found` of the catch-all route. Problems are collected, not thrown: a
// fetch that throws inside the openai SDK would turn into a retried connection error.

type Json = Record<string, unknown>;

interface Operation {
  pattern: RegExp;
  template: string;
  method: string;
  responses: Record<string, Json>;
}

const document = OPENAPI_DOCUMENT as unknown as { paths: Record<string, Record<string, { responses: Record<string, Json> }>> };
const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
ajv.addSchema(OPENAPI_DOCUMENT as object, "openapi");

const escapePointer = (segment: string) => segment.replaceAll("~", "~0").replaceAll("/", "~1");
const templatePattern = (template: string) =>
  new RegExp(`^${template.split("/").map((part) => (/^\{.+\}$/.test(part) ? "[^/]+" : part.replace(/[.*+?^$()|[\]\\]/g, "\\$&"))).join("/")}$`);

const operations: Operation[] = Object.entries(document.paths).flatMap(([template, item]) =>
  Object.entries(item).map(([method, operation]) => ({ pattern: templatePattern(template), template, method: method.toUpperCase(), responses: operation.responses })),
);

const validators = new Map<string, ValidateFunction>();
function validatorFor(pointer: string): ValidateFunction {
  let validate = validators.get(pointer);
  if (!validate) {
    validate = ajv.getSchema(`openapi#${pointer}`);
    if (!validate) throw new Error(`no schema at ${pointer} in the OpenAPI document`);
    validators.set(pointer, validate);
  }
  return validate;
}

const NOT_FOUND_POINTER = "/components/schemas/Error";

/** What is wrong with one response, or [] when it matches the document. */
export async function openApiProblems(method: string, url: URL, response: Response): Promise<string[]> {
  const where = `${method} ${url.pathname} → ${response.status}`;
  const candidates = operations.filter((operation) => operation.pattern.test(url.pathname));
  const operation = candidates.find((candidate) => candidate.method === method) ?? (method === "HEAD" ? candidates.find((candidate) => candidate.method === "GET") : undefined);
  const body = method === "HEAD" ? "" : await response.clone().text();
  if (!operation) {
    if (response.status !== 404) return [`${where}: the document has no such operation, and the answer is not the catch-all 404`];
    return jsonProblems(where, NOT_FOUND_POINTER, response, body);
  }
  const status = String(response.status);
  const documented = operation.responses[status] ?? operation.responses.default;
  if (!documented) return [`${where}: status ${status} is not documented for ${operation.method} ${operation.template}`];
  const problems: string[] = [];
  for (const [name, header] of Object.entries((documented.headers ?? {}) as Record<string, Json>)) {
    const required = header.required ?? ("$ref" in header && header.$ref === "#/components/headers/RequestId");
    if (required && !response.headers.has(name)) problems.push(`${where}: header ${name} is missing`);
  }
  const content = (documented.content ?? {}) as Record<string, Json>;
  if (method === "HEAD" || response.status === 304 || Object.keys(content).length === 0) return problems;
  const mediaType = (response.headers.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
  if (!Object.hasOwn(content, mediaType)) return [...problems, `${where}: content type ${JSON.stringify(mediaType)} is not one of ${Object.keys(content).join(", ")}`];
  if (!content[mediaType]!.schema || mediaType !== "application/json") return problems;
  const pointer = ["", "paths", escapePointer(operation.template), operation.method.toLowerCase(), "responses", status, "content", escapePointer(mediaType), "schema"].join("/");
  return [...problems, ...jsonProblems(where, pointer, response, body)];
}

function jsonProblems(where: string, pointer: string, response: Response, body: string): string[] {
  if (!(response.headers.get("content-type") ?? "").startsWith("application/json")) return [`${where}: not JSON (${response.headers.get("content-type")})`];
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    return [`${where}: the body is not valid JSON`];
  }
  const validate = validatorFor(pointer);
  if (validate(value)) return [];
  return (validate.errors ?? []).map((error) => `${where}: ${error.instancePath || "body"} ${error.message} (${JSON.stringify(error.params)})`);
}

/** Problems found by every validating fetch in this process, for a suite's afterEach/afterAll to assert empty. */
export const openApiViolations: string[] = [];
/** How many responses were validated (a suite can assert its fetch was really wrapped). */
export const openApiChecked = { responses: 0 };

/**
 * A fetch that validates each response against the document before handing it back.
 * Use it for raw calls and give it to the openai SDK (`new OpenAI({ fetch })`).
 */
export function validatingFetch(inner: typeof fetch = globalThis.fetch): typeof fetch {
  return async (input, init) => {
    // Read from the arguments: building a Request from a Request would take its body.
    const method = (init?.method ?? (input instanceof Request ? input.method : "GET")).toUpperCase();
    const url = new URL(input instanceof Request ? input.url : String(input));
    const response = await inner(input, init);
    openApiChecked.responses += 1;
    openApiViolations.push(...(await openApiProblems(method, url, response)));
    return response;
  };
}
