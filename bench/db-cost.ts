// `node --import tsx bench/db-cost.ts`: what one image request costs PostgreSQL.
// Sends DB_COST_REQUESTS (default 200) sequential requests through Orvado (fake
// instant upstream, real PostgreSQL) and divides the database's counters by
// them: transactions committed, rows written and read, WAL flushes. With
// synchronous_commit on, every commit on the request's path waits for a flush,
// which is most of the single-connection latency on a small machine.
// pg_stat_wal is server-wide: anything else using the server is counted too.
import pg from "pg";
import { DEFAULT_DB_SERVER } from "./database.ts";
import { BENCH_MODEL, startOrvado, startUpstream, writeBenchCatalog } from "./servers.ts";
import { fixed } from "./stats.ts";

const REQUESTS = Number(process.env.DB_COST_REQUESTS ?? 200);
const SETTLE_MS = 3000;

type Counters = Record<string, number>;

async function counters(admin: pg.Client, database: string): Promise<Counters> {
  // Statistics are cached per transaction; start from a fresh snapshot each time.
  await admin.query("SELECT pg_stat_clear_snapshot()");
  const db = await admin.query(
    `SELECT xact_commit, tup_inserted, tup_updated, tup_deleted, tup_returned + tup_fetched AS tup_read
       FROM pg_stat_database WHERE datname = $1`,
    [database],
  );
  const wal = await admin.query("SELECT wal_sync FROM pg_stat_wal");
  return Object.fromEntries(Object.entries({ ...db.rows[0], ...wal.rows[0] }).map(([name, value]) => [name, Number(value)]));
}

const upstream = await startUpstream();
const orvado = await startOrvado({ modelsFile: writeBenchCatalog(upstream.info.url, 1000), env: { BENCH_LOG_LEVEL: "warn" } });
const admin = new pg.Client({ connectionString: process.env.BENCH_DB_SERVER ?? DEFAULT_DB_SERVER });
try {
  await admin.connect();
  const database = new URL(orvado.info.databaseUrl).pathname.slice(1);
  const body = JSON.stringify({ model: BENCH_MODEL, prompt: "a lighthouse", size: "1024x1024", response_format: "b64_json" });
  const send = async () => {
    const response = await fetch(`${orvado.info.edgeUrl}/v1/images/generations`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${orvado.info.key}` },
      body,
    });
    if (response.status !== 200) throw new Error(`Orvado answered ${response.status}: ${await response.text()}`);
    await response.arrayBuffer();
  };
  for (let index = 0; index < 20; index += 1) await send();
  // Let settlement and the outbox relays finish the warm-up's work before counting.
  await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
  const before = await counters(admin, database);
  const start = performance.now();
  for (let index = 0; index < REQUESTS; index += 1) await send();
  const msPerRequest = (performance.now() - start) / REQUESTS;
  await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
  const after = await counters(admin, database);
  process.stdout.write(`${REQUESTS} sequential requests, ${fixed(msPerRequest)} ms each; per request, including settlement:\n`);
  for (const name of Object.keys(before)) process.stdout.write(`  ${name.padEnd(14)} ${fixed((after[name]! - before[name]!) / REQUESTS, 1)}\n`);
} finally {
  await admin.end();
  await orvado.stop();
  await upstream.stop();
}
