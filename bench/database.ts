// A fresh PostgreSQL database per benchmark run, named orvado_bench_… so a
// leftover from a killed run is easy to tell from the test suite's databases.
import { randomBytes } from "node:crypto";
import pg from "pg";

export const DEFAULT_DB_SERVER = "postgres://postgres@127.0.0.1:5432/postgres";

export interface BenchDatabase {
  url: string;
  drop(): Promise<void>;
}

async function onServer(serverUrl: string, sql: string) {
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

export async function createBenchDatabase(serverUrl = process.env.BENCH_DB_SERVER ?? DEFAULT_DB_SERVER): Promise<BenchDatabase> {
  const name = `orvado_bench_${randomBytes(5).toString("hex")}`;
  await onServer(serverUrl, `CREATE DATABASE ${name}`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: () => onServer(serverUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}
