import { mkdirSync } from "node:fs";
import type { Db } from "./db.ts";
import { openPgDb } from "./pg-db.ts";

/**
 * postgres://… or postgresql://… → a PostgreSQL server through node-postgres;
 * memory:// → PGlite in memory; anything else → PGlite stored in that directory.
 */
export async function openDb(location: string, options: { maxConnections?: number } = {}): Promise<Db> {
  if (/^postgres(ql)?:\/\//.test(location)) return openPgDb(location, options.maxConnections ?? poolMaxFromEnv());
  // Loaded only when used: PGlite's module alone adds tens of MB to a process, and a
  // service on a PostgreSQL server (every production process) never needs it
  // (docs/design-choices.md#bundles-run-with-plain-node).
  const { openPgliteDb } = await import("./pglite-db.ts");
  if (location === "memory://") return openPgliteDb();
  mkdirSync(location, { recursive: true });
  return openPgliteDb(location);
}

/**
 * DATABASE_POOL_MAX: connections per process (default 10). Every service process
 * holds its own pool, so replicas × services × this must stay under the server's
 * max_connections (100 on a stock PostgreSQL).
 */
export function poolMaxFromEnv(env: NodeJS.ProcessEnv = process.env): number {
  const text = env.DATABASE_POOL_MAX;
  if (text === undefined || text === "") return 10;
  const value = Number(text);
  if (!Number.isInteger(value) || value < 1 || value > 1000) throw new Error(`DATABASE_POOL_MAX must be a whole number from 1 to 1000 (got ${JSON.stringify(text)})`);
  return value;
}
