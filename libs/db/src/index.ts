export * from "./db.ts";
export { openDb, poolMaxFromEnv } from "./open.ts";
export { migrate } from "./migrate.ts";
