export * from "./database.ts";
export * from "./grpc-js.ts";
