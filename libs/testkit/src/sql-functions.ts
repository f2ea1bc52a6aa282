import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { functionDefinitions, migrate, openDb } from "@orvado/db";
import { freshDatabase } from "./database.ts";

export interface SqlFunctionPaths {
  /** A fresh database migrated with the function files. */
  fresh: Map<string, string>;
  /** A database whose functions came from the migrations alone (as every database made before sql/functions), then migrated with the files. */
  existing: Map<string, string>;
  /** The existing database's definitions after every file was run again by hand. */
  filesAgain: Map<string, string>;
}

/**
 * The schema's functions (signature → pg_get_functiondef) on the two paths a
 * database takes to the current state: fresh, and existing from before the
 * function files. On whichever database freshDatabase() gives.
 */
export async function sqlFunctionPaths(schema: string, migrations: string, functions: string): Promise<SqlFunctionPaths> {
  const fresh = await withDatabase(async (db) => {
    await migrate(db, schema, migrations, functions);
    return functionDefinitions(db, schema);
  });
  const [existing, filesAgain] = await withDatabase(async (db) => {
    await migrate(db, schema, migrations);
    await migrate(db, schema, migrations, functions);
    const existing = await functionDefinitions(db, schema);
    for (const file of readdirSync(functions).filter((name) => name.endsWith(".sql"))) await db.exec(readFileSync(join(functions, file), "utf8"));
    return [existing, await functionDefinitions(db, schema)] as const;
  });
  return { fresh, existing, filesAgain };
}

async function withDatabase<T>(fn: (db: Awaited<ReturnType<typeof openDb>>) => Promise<T>): Promise<T> {
  const database = await freshDatabase();
  const db = await openDb(database.url);
  try {
    return await fn(db);
  } finally {
    await db.close();
    await database.drop();
  }
}

/** The function names the files of dir define: one per file, named as the file. */
export const functionFileNames = (dir: string): string[] =>
  readdirSync(dir)
    .filter((name) => name.endsWith(".sql"))
    .map((name) => name.slice(0, -4))
    .sort();
