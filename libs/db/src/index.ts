export * from "./db.ts";
export { openDb } from "./open.ts";
export { migrate } from "./migrate.ts";
