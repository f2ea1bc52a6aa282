export * from "./server.ts";
export * from "./client.ts";
export * from "./secret.ts";
export { HealthState } from "./health.ts";
export { Code, ConnectError } from "@connectrpc/connect";
