// `node --import tsx bench/db-cost.ts`: what one image request costs PostgreSQL.
// Sends DB_COST_REQUESTS (default 200) sequential requests through Orvado (fake
// instant upstream, real PostgreSQL) and divides the database's counters by
// them: transactions committed, rows written and read, buffers read, WAL records,
// bytes and flushes, and the balance and key-spend rows updated and looked up.
// With synchronous_commit on, every commit on the request's path waits for a
// flush, which is most of the single-connection latency on a small machine.
//
// DB_COST_CONNECTIONS (default 1) above 1 sends load from that many connections
// for DB_COST_DURATION_S (default 10) instead, and DB_COST_ACCOUNTS (default 1)
// spreads it over that many funded accounts and keys, as npm run bench's
// 64-account target does (docs/performance.md#the-64-account-legs). Under load
// the divisor is the answers counted in the window; the few requests still in
// flight when it closes are settled and counted too (a small share).
// pg_stat_wal is server-wide: anything else using the server is counted too.
import pg from "pg";
import { DEFAULT_DB_SERVER } from "./database.ts";
import { runLoad } from "./load.ts";
import { startOrvado, startUpstream, writeBenchCatalog } from "./servers.ts";
import { orvadoTargets } from "./targets.ts";
import { fixed } from "./stats.ts";

const REQUESTS = Number(process.env.DB_COST_REQUESTS ?? 200);
const CONNECTIONS = Number(process.env.DB_COST_CONNECTIONS ?? 1);
const DURATION_S = Number(process.env.DB_COST_DURATION_S ?? 10);
const ACCOUNTS = Math.max(1, Number(process.env.DB_COST_ACCOUNTS ?? 1));
/**
 * Settlement and the outbox relays finish within a few seconds, but a PostgreSQL 15 backend
 * that goes idle publishes its last second's counters only after 10 s (PGSTAT_IDLE_INTERVAL):
 * read sooner, the statistics miss the end of the window and carry the warm-up's into it.
 * The relays' and consumers' idle polls during the wait are counted too: read-only
 * transactions and reads, no rows written and no WAL flush.
 */
const SETTLE_MS = 11_000;

type Counters = Record<string, number>;

/** The money rows a batch of holds or settlements touches once per account or key it names. */
const PER_ACCOUNT_TABLES = `SELECT relname, n_tup_upd, idx_scan FROM pg_stat_user_tables
                             WHERE schemaname = 'billing' AND relname IN ('balances', 'key_spend')`;

async function counters(admin: pg.Client, own: pg.Client, database: string): Promise<Counters> {
  // Statistics are cached per transaction; start from a fresh snapshot each time.
  await admin.query("SELECT pg_stat_clear_snapshot()");
  const db = await admin.query(
    `SELECT xact_commit, tup_inserted, tup_updated, tup_deleted, tup_returned + tup_fetched AS tup_read, blks_hit + blks_read AS buffers
       FROM pg_stat_database WHERE datname = $1`,
    [database],
  );
  const wal = await admin.query("SELECT wal_records, wal_bytes, wal_sync FROM pg_stat_wal");
  // pg_stat_user_tables shows the tables of the database it is asked in.
  const tables = await own.query<{ relname: string; n_tup_upd: string; idx_scan: string }>(PER_ACCOUNT_TABLES);
  const rows: Record<string, unknown> = {};
  for (const table of tables.rows) {
    rows[`${table.relname}_updated`] = table.n_tup_upd;
    rows[`${table.relname}_index_reads`] = table.idx_scan;
  }
  return Object.fromEntries(Object.entries({ ...db.rows[0], ...wal.rows[0], ...rows }).map(([name, value]) => [name, Number(value)]));
}

const upstream = await startUpstream();
const orvado = await startOrvado({
  modelsFile: writeBenchCatalog(upstream.info.url, 100_000),
  env: { BENCH_LOG_LEVEL: "warn", BENCH_ORVADO_ACCOUNTS: String(ACCOUNTS) },
});
const admin = new pg.Client({ connectionString: process.env.BENCH_DB_SERVER ?? DEFAULT_DB_SERVER });
const own = new pg.Client({ connectionString: orvado.info.databaseUrl });
try {
  await admin.connect();
  await own.connect();
  const database = new URL(orvado.info.databaseUrl).pathname.slice(1);
  const target = orvadoTargets(orvado.info).at(-1)!; // the spread one when there are several accounts
  const send = async () => {
    const response = await fetch(target.url, {
      method: "POST",
      headers: { "content-type": "application/json", ...target.headers },
      body: target.body,
    });
    if (response.status !== 200) throw new Error(`Orvado answered ${response.status}: ${await response.text()}`);
    await response.arrayBuffer();
  };
  if (CONNECTIONS > 1) await runLoad(target, CONNECTIONS, 5);
  else for (let index = 0; index < 20; index += 1) await send();
  // Let settlement and the outbox relays finish the warm-up's work before counting.
  await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
  const before = await counters(admin, own, database);
  let requests = REQUESTS;
  let how: string;
  if (CONNECTIONS > 1) {
    const result = await runLoad(target, CONNECTIONS, DURATION_S);
    if (result.errors > 0) throw new Error(`${result.errors} requests failed`);
    requests = result.requests;
    how = `${requests} requests from ${CONNECTIONS} connections in ${DURATION_S} s`;
  } else {
    const start = performance.now();
    for (let index = 0; index < REQUESTS; index += 1) await send();
    how = `${requests} sequential requests, ${fixed((performance.now() - start) / requests)} ms each`;
  }
  await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
  const after = await counters(admin, own, database);
  process.stdout.write(`${how}, over ${ACCOUNTS} account(s); per request, including settlement:\n`);
  for (const name of Object.keys(before)) process.stdout.write(`  ${name.padEnd(22)} ${fixed((after[name]! - before[name]!) / requests, 2)}\n`);
} finally {
  await own.end();
  await admin.end();
  await orvado.stop();
  await upstream.stop();
}
