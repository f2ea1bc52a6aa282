import { createLogger } from "@orvado/core";
import { openDb, type Db } from "@orvado/db";
import { freshDatabase } from "@orvado/testkit";

// Shared by this lib's own tests (not exported from the package).

export const silentLogger = createLogger("events-test", "silent");

export interface TestDatabase {
  /** The main connection. */
  db: Db;
  /**
   * Another connection to the same database, standing in for a second process:
   * a new pool on a server; on PGlite (in-process, one connection) the same Db.
   */
  another(): Promise<Db>;
  close(): Promise<void>;
}

export async function openTestDatabase(): Promise<TestDatabase> {
  const fresh = await freshDatabase();
  const db = await openDb(fresh.url, { maxConnections: 8 });
  const extra: Db[] = [];
  return {
    db,
    async another() {
      if (db.kind === "pglite") return db;
      const other = await openDb(fresh.url, { maxConnections: 8 });
      extra.push(other);
      return other;
    },
    async close() {
      await Promise.all(extra.map((other) => other.close()));
      await db.close();
      await fresh.drop();
    },
  };
}

export async function waitUntil(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

export const bytes = (text: string): Uint8Array => new Uint8Array(Buffer.from(text));
export const text = (value: Uint8Array): string => Buffer.from(value).toString("utf8");
