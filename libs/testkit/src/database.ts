import { randomBytes } from "node:crypto";
import pg from "pg";

export interface FreshDatabase {
  /** postgres://… of a new, empty database, or memory:// when no server is configured. */
  url: string;
  drop(): Promise<void>;
}

/**
 * With TEST_DATABASE_URL (CI: the machine's PostgreSQL) each call creates a new
 * database on that server, so test files never see each other's rows; without
 * it, tests run on in-memory PGlite.
 */
export async function freshDatabase(serverUrl = process.env.TEST_DATABASE_URL): Promise<FreshDatabase> {
  if (!serverUrl) return { url: "memory://", drop: async () => {} };
  const name = `orvado_t_${randomBytes(6).toString("hex")}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const client = new pg.Client({ connectionString: serverUrl });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await client.end();
    },
  };
}

export const usingServer = () => Boolean(process.env.TEST_DATABASE_URL);
