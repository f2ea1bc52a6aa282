import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { Db } from "./db.ts";

const SCHEMA_NAME = /^[a-z_][a-z0-9_]*$/;

/**
 * Applies dir/*.sql in name order, each once, inside the service's own schema.
 * An advisory lock makes concurrent starts of several replicas safe.
 */
export async function migrate(db: Db, schema: string, dir: string): Promise<string[]> {
  if (!SCHEMA_NAME.test(schema)) throw new Error(`bad schema name ${schema}`);
  const files = readdirSync(dir).filter((name) => name.endsWith(".sql")).sort();
  return db.tx(async (q) => {
    await q.query("SELECT pg_advisory_xact_lock(hashtext($1))", [`orvado.migrate.${schema}`]);
    await q.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
    await q.query(
      `CREATE TABLE IF NOT EXISTS ${schema}.schema_migrations (name TEXT PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())`,
    );
    const done = await q.query<{ name: string }>(`SELECT name FROM ${schema}.schema_migrations`);
    const applied = new Set(done.rows.map((row) => row.name));
    const ran: string[] = [];
    for (const file of files) {
      if (applied.has(file)) continue;
      await q.exec(readFileSync(join(dir, file), "utf8"));
      await q.query(`INSERT INTO ${schema}.schema_migrations (name) VALUES ($1)`, [file]);
      ran.push(file);
    }
    return ran;
  });
}
