// `npm run bench:ledger`: reserve + capture pairs per second on the machine's
// PostgreSQL through billing's own code (services/billing/src/reserve.ts and
// settle.ts), many workers over many accounts, on a fresh database.
//
// Billing is started for real (migrations, prices, outbox relay, settlement
// consumer, hold sweeper), so the relay's work competes as it would in
// production; the pairs themselves call reserve() and settle() directly, the
// functions billing's Reserve RPC and its settlement consumer call.
//
// Environment: BENCH_LEDGER_WORKERS (default 32), BENCH_LEDGER_ACCOUNTS (default 1000),
// BENCH_LEDGER_SECONDS (default 20), BENCH_LEDGER_KEY_LIMIT (1 = keys carry a spend
// limit, exercising the key_spend path; default 0), BENCH_DB_SERVER.
import { randomUUID } from "node:crypto";
import { cpus, loadavg, totalmem } from "node:os";
import { join } from "node:path";
import { writeFileSync, mkdirSync } from "node:fs";
import { createLogger } from "@orvado/core";
import { openDb, type Db } from "@orvado/db";
import { openEventStream } from "@orvado/events";
import { Tier } from "@orvado/proto";
import { loadBillingConfig, startBilling } from "../services/billing/src/index.ts";
import { reserve } from "../services/billing/src/reserve.ts";
import { settle } from "../services/billing/src/settle.ts";
import { topUp } from "../services/billing/src/top-up.ts";
import { createBenchDatabase } from "./database.ts";
import { RESULTS_DIR } from "./servers.ts";
import { fixed, formatTable, percentile, since } from "./stats.ts";

const WORKERS = Number(process.env.BENCH_LEDGER_WORKERS ?? 32);
const ACCOUNTS = Number(process.env.BENCH_LEDGER_ACCOUNTS ?? 1000);
const SECONDS = Number(process.env.BENCH_LEDGER_SECONDS ?? 20);
const KEY_LIMIT = process.env.BENCH_LEDGER_KEY_LIMIT === "1";
const WARMUP_SECONDS = 3;
const HOLD_TTL_MS = 15 * 60_000;
const started = Date.now();
const log = (message: string) => process.stderr.write(`[ledger ${since(started)}] ${message}\n`);

interface Account {
  accountId: string;
  keyId: string;
}

async function fundAccounts(db: Db): Promise<Account[]> {
  const accounts = Array.from({ length: ACCOUNTS }, (_, index) => ({ accountId: `acct_bench_${index}`, keyId: `key_bench_${index}` }));
  for (const account of accounts) {
    await topUp(db, { accountId: account.accountId, amountMicros: 100_000n * 1_000_000n, note: "bench", topUpId: `topup_${account.accountId}` });
  }
  return accounts;
}

interface Timings {
  pairs: number[];
  reserves: number[];
  settles: number[];
  refusals: number;
}

/** One reservation of one beta 1K image, then its capture: what a successful request costs the ledger. */
async function pair(db: Db, account: Account, timings: Timings) {
  const requestId = `req_${randomUUID().replaceAll("-", "")}`;
  const start = performance.now();
  const outcome = await reserve(
    db,
    { requestId, ...account, keyLimitMicros: KEY_LIMIT ? 1_000_000n * 1_000_000n : undefined, model: "beta", tier: Tier.TIER_1K, size: "1024x1024", imagesRequested: 1 },
    HOLD_TTL_MS,
  );
  const reserved = performance.now();
  if (!("hold" in outcome)) {
    timings.refusals += 1;
    return;
  }
  const result = await settle(db, requestId, { kind: "completed", imagesDelivered: 1 });
  if (result !== "applied") throw new Error(`settle ${requestId}: ${result}`);
  const end = performance.now();
  timings.pairs.push(end - start);
  timings.reserves.push(reserved - start);
  timings.settles.push(end - reserved);
}

async function drive(db: Db, accounts: Account[], seconds: number): Promise<Timings & { seconds: number }> {
  const timings: Timings = { pairs: [], reserves: [], settles: [], refusals: 0 };
  const until = performance.now() + seconds * 1000;
  const begin = performance.now();
  await Promise.all(
    Array.from({ length: WORKERS }, async (_, worker) => {
      // Each worker walks its own stride of accounts: parallel pairs rarely wait on one account's row lock.
      for (let turn = 0; performance.now() < until; turn += 1) {
        await pair(db, accounts[(worker + turn * WORKERS) % accounts.length]!, timings);
      }
    }),
  );
  return { ...timings, seconds: (performance.now() - begin) / 1000 };
}

/**
 * The ceiling this machine puts on any ledger design: trivial statements per
 * second through the same pool and workers. A pair costs about 20 statements.
 */
async function roundTripsPerSecond(db: Db, seconds: number): Promise<number> {
  let count = 0;
  const until = performance.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: WORKERS }, async () => {
      for (; performance.now() < until; count += 1) await db.query("SELECT 1");
    }),
  );
  return count / seconds;
}

/** The ledger must still add up: every capture is one price, nothing is left on hold. */
async function checkBooks(db: Db, expectedCaptures: number) {
  const ledger = await db.query<{ captures: bigint; held: bigint }>(
    `SELECT (SELECT count(*) FROM billing.ledger WHERE kind = 'capture') AS captures,
            (SELECT coalesce(sum(held_micros), 0) FROM billing.balances) AS held`,
  );
  const row = ledger.rows[0]!;
  if (Number(row.captures) !== expectedCaptures || BigInt(row.held) !== 0n) {
    throw new Error(`books do not add up: ${row.captures} captures for ${expectedCaptures} pairs, ${row.held} micros still held`);
  }
}

const stats = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return { p50: percentile(sorted, 50), p90: percentile(sorted, 90), p99: percentile(sorted, 99), max: sorted.at(-1) ?? 0 };
};

async function main() {
  const database = await createBenchDatabase();
  const logger = createLogger("ledger-bench", process.env.BENCH_LOG_LEVEL ?? "warn");
  // The pool is sized to the workers, plus a few for billing's relay and consumer.
  const db = await openDb(database.url, { maxConnections: WORKERS + 4 });
  const stream = await openEventStream({ db, logger });
  const billing = await startBilling(
    loadBillingConfig({ ...process.env, DATABASE_URL: database.url, BILLING_PORT: "0", ORVADO_INTERNAL_SECRET: "bench-internal-secret-000", ORVADO_PRICES_FILE: new URL("../config/prices.json", import.meta.url).pathname }),
    { db, stream, logger },
  );
  try {
    log(`funding ${ACCOUNTS} accounts`);
    const accounts = await fundAccounts(db);
    const baseline = await roundTripsPerSecond(db, 3);
    log(`baseline: ${fixed(baseline, 0)} SELECT 1 round trips/s with ${WORKERS} workers`);
    log(`warming up ${WARMUP_SECONDS}s`);
    const warmup = await drive(db, accounts, WARMUP_SECONDS);
    log(`measuring ${SECONDS}s with ${WORKERS} workers`);
    const run = await drive(db, accounts, SECONDS);
    await checkBooks(db, warmup.pairs.length + run.pairs.length);
    const rate = run.pairs.length / run.seconds;
    const rows: (string | number)[][] = [["phase", "p50 ms", "p90 ms", "p99 ms", "max ms"]];
    for (const [name, values] of [["reserve+capture", run.pairs], ["reserve", run.reserves], ["capture (settle)", run.settles]] as const) {
      const s = stats(values);
      rows.push([name, fixed(s.p50), fixed(s.p90), fixed(s.p99), fixed(s.max)]);
    }
    process.stdout.write(
      `\n${run.pairs.length} pairs in ${fixed(run.seconds, 1)} s with ${WORKERS} workers over ${ACCOUNTS} accounts${KEY_LIMIT ? " (keys with limits)" : ""}: ` +
        `${fixed(rate, 0)} pairs/s (target ≥ 3000: ${rate >= 3000 ? "meets" : "misses"}); refusals ${run.refusals}; books balanced\n` +
        `baseline on this machine: ${fixed(baseline, 0)} "SELECT 1" round trips/s with the same pool and workers\n\n${formatTable(rows)}\n`,
    );
    mkdirSync(RESULTS_DIR, { recursive: true });
    const file = join(RESULTS_DIR, `ledger-${new Date().toISOString().replace(/[:.]/g, "-")}.json`);
    const summary = { pairs: stats(run.pairs), reserve: stats(run.reserves), settle: stats(run.settles) };
    writeFileSync(
      file,
      JSON.stringify({ when: new Date().toISOString(), machine: { cpus: cpus().length, cpuModel: cpus()[0]?.model, memoryBytes: totalmem(), loadAverage: loadavg() }, workers: WORKERS, accounts: ACCOUNTS, keyLimit: KEY_LIMIT, seconds: run.seconds, pairs: run.pairs.length, pairsPerSecond: rate, selectOneRoundTripsPerSecond: baseline, latencyMs: summary }, null, 2),
    );
    log(`wrote ${file}`);
  } finally {
    await billing.stop();
    await stream.close();
    await db.close();
    await database.drop();
  }
}

await main();
