export * from "./database.ts";
export * from "./grpc-js.ts";
export * from "./counting.ts";
export * from "./test-stream.ts";
export * from "./sql-functions.ts";
