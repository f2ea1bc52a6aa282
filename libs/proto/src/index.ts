// Generated code lives in ./gen (committed, so a fresh clone needs no codegen step);
// `npm run generate` rewrites it from proto/ and a test checks it is up to date.
export * from "./gen/orvado/v1/common_pb.ts";
export * from "./gen/orvado/v1/auth_pb.ts";
export * from "./gen/orvado/v1/billing_pb.ts";
export * from "./gen/orvado/v1/generation_pb.ts";
export * from "./gen/orvado/v1/events_pb.ts";
export * from "./gen/orvado/v1/webhooks_pb.ts";
export * as health from "./gen/grpc/health/v1/health_pb.ts";
