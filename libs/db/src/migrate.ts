import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { Db, Queryable } from "./db.ts";

const SCHEMA_NAME = /^[a-z_][a-z0-9_]*$/;

interface SqlFile {
  name: string;
  text: string;
  sha256: string;
}

/**
 * Brings a service's schema to its current state, inside one transaction under
 * an advisory lock (concurrent starts of several replicas are safe):
 *
 * 1. migrationsDir/*.sql (tables and data) in name order, each once. Each applied
 *    migration's sha256 is recorded; a start refuses to go on if a file that
 *    already ran has been edited since (a database would silently differ from a
 *    fresh one). Rows from before the checksum existed take the file's current one.
 * 2. functionsDir/*.sql (one SQL function per file, CREATE OR REPLACE), all of them
 *    at every start: the files are the current definition of every function in
 *    the schema. A function no file defines any more (one whose signature changed,
 *    or one removed) is dropped.
 *
 * Answers the migrations that ran.
 */
export async function migrate(db: Db, schema: string, migrationsDir: string, functionsDir?: string): Promise<string[]> {
  if (!SCHEMA_NAME.test(schema)) throw new Error(`bad schema name ${schema}`);
  const migrations = readSqlFiles(migrationsDir);
  const functions = functionsDir ? readSqlFiles(functionsDir) : [];
  return db.tx(async (q) => {
    await q.query("SELECT pg_advisory_xact_lock(hashtext($1))", [`orvado.migrate.${schema}`]);
    await prepareMigrationTable(q, schema);
    const applied = await checkAppliedMigrations(q, schema, migrations, migrationsDir);
    // The migrations run in a subtransaction, so that their rows in pg_proc carry
    // its transaction id, not the top-level one the function files write with
    // (see dropFunctionsNoFileDefines).
    await q.query("SAVEPOINT orvado_migrations");
    const ran: string[] = [];
    for (const file of migrations) {
      if (applied.has(file.name)) continue;
      await q.exec(file.text);
      await q.query(`INSERT INTO ${schema}.schema_migrations (name, sha256) VALUES ($1, $2)`, [file.name, file.sha256]);
      ran.push(file.name);
    }
    await q.query("RELEASE SAVEPOINT orvado_migrations");
    if (functionsDir) {
      for (const file of functions) await q.exec(file.text);
      await dropFunctionsNoFileDefines(q, schema);
    }
    return ran;
  });
}

function readSqlFiles(dir: string): SqlFile[] {
  return readdirSync(dir)
    .filter((name) => name.endsWith(".sql"))
    .sort()
    .map((name) => {
      const bytes = readFileSync(join(dir, name));
      return { name, text: bytes.toString("utf8"), sha256: createHash("sha256").update(bytes).digest("hex") };
    });
}

async function prepareMigrationTable(q: Queryable, schema: string): Promise<void> {
  await q.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
  await q.query(
    `CREATE TABLE IF NOT EXISTS ${schema}.schema_migrations (name TEXT PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())`,
  );
  // Databases made before checksums were recorded gain the column here.
  await q.query(`ALTER TABLE ${schema}.schema_migrations ADD COLUMN IF NOT EXISTS sha256 TEXT`);
}

/**
 * The names of the migrations already applied. Refuses (throws) when one of their
 * files differs from what ran; records the checksum of rows that have none yet.
 * A recorded migration whose file is gone is left alone.
 */
async function checkAppliedMigrations(q: Queryable, schema: string, files: SqlFile[], dir: string): Promise<Set<string>> {
  const { rows } = await q.query<{ name: string; sha256: string | null }>(`SELECT name, sha256 FROM ${schema}.schema_migrations`);
  const byName = new Map(files.map((file) => [file.name, file]));
  for (const row of rows) {
    const file = byName.get(row.name);
    if (!file) continue;
    if (row.sha256 === null) {
      await q.query(`UPDATE ${schema}.schema_migrations SET sha256 = $2 WHERE name = $1`, [row.name, file.sha256]);
    } else if (row.sha256 !== file.sha256) {
      throw new Error(
        `migration ${join(dir, row.name)} was edited after it was applied to schema ${schema} ` +
          `(sha256 then ${row.sha256}, now ${file.sha256}); restore the file and put the change in a new migration`,
      );
    }
  }
  return new Set(rows.map((row) => row.name));
}

/**
 * Every function file ran at the top level of this transaction, and CREATE OR
 * REPLACE rewrites a function's pg_proc row even when nothing changed, so a
 * function of the schema whose row this transaction's own id did not write is
 * one no file defines (migrations write theirs in a subtransaction, with another id).
 */
async function dropFunctionsNoFileDefines(q: Queryable, schema: string): Promise<void> {
  const { rows } = await q.query<{ signature: string }>(
    `SELECT format('%I.%I(%s)', n.nspname, p.proname, pg_get_function_identity_arguments(p.oid)) AS signature
       FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
      WHERE n.nspname = $1 AND p.prokind IN ('f', 'p') AND p.xmin <> pg_current_xact_id()::xid
        AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e')`,
    [schema],
  );
  for (const row of rows) await q.exec(`DROP ROUTINE ${row.signature}`);
}

/** The function names (schema.name(identity arguments)) of a schema, each with its full definition. */
export async function functionDefinitions(q: Queryable, schema: string): Promise<Map<string, string>> {
  const { rows } = await q.query<{ signature: string; definition: string }>(
    `SELECT format('%I.%I(%s)', n.nspname, p.proname, pg_get_function_identity_arguments(p.oid)) AS signature,
            pg_get_functiondef(p.oid) AS definition
       FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
      WHERE n.nspname = $1 AND p.prokind IN ('f', 'p')
      ORDER BY 1`,
    [schema],
  );
  return new Map(rows.map((row) => [row.signature, row.definition]));
}
