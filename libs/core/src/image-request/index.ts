// The public image request's contract (fields.ts), for the edge, generation and the OpenAPI document.
export * from "./fields.ts";
export * from "./check.ts";
export * from "./to-rpc.ts";
export * from "./json-schema.ts";
