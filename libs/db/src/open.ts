import { mkdirSync } from "node:fs";
import type { Db } from "./db.ts";
import { openPgDb } from "./pg-db.ts";
import { openPgliteDb } from "./pglite-db.ts";

/**
 * postgres://… or postgresql://… → a PostgreSQL server through node-postgres;
 * memory:// → PGlite in memory; anything else → PGlite stored in that directory.
 */
export async function openDb(location: string, options: { maxConnections?: number } = {}): Promise<Db> {
  if (/^postgres(ql)?:\/\//.test(location)) return openPgDb(location, options.maxConnections);
  if (location === "memory://") return openPgliteDb();
  mkdirSync(location, { recursive: true });
  return openPgliteDb(location);
}
