export * from "./money.ts";
export * from "./ids.ts";
export * from "./errors.ts";
export * from "./config.ts";
export * from "./log.ts";
export * from "./process.ts";
export * from "./tiers.ts";
export * from "./shared-calls.ts";
