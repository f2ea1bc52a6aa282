export * from "./db.ts";
export { openDb, poolMaxFromEnv } from "./open.ts";
export { functionDefinitions, migrate } from "./migrate.ts";
export { prepareStatement } from "./pg-db.ts";
