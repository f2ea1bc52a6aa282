// `npm run bench:ledger`: reserve + capture pairs per second on the machine's
// PostgreSQL through billing's own code, many workers over many accounts, on a
// fresh database; first the way production captures on the Postgres event log (events
// through the stream, settled in batches by billing's consumer), then each capture alone,
// then (with KAFKA_BROKERS) the production way with the events on Kafka
// (bench/ledger-pairs.ts says what each does).
//
// Billing is started for real (migrations, prices, outbox relay, settlement
// consumer, hold sweeper), and so is a relay for generation's outbox, so the
// stream's work competes as it would in production (bench/ledger-pipeline.ts); for
// the Kafka runs both are started again on Kafka, under a topic prefix of the run's own.
//
// The target is a capacity (pairs per second the ledger sustains), so the production
// way runs at several numbers of concurrent requests ("workers"): with few, a worker's
// two round trips bound the rate, not the ledger. The headline is the highest rate.
//
// Environment: BENCH_LEDGER_WORKERS (concurrent requests, a comma-separated list;
// default 32,64,128; the direct way runs at the first; the Kafka way at each), BENCH_LEDGER_ACCOUNTS
// (default 1000), BENCH_LEDGER_SECONDS (default 20, per run), BENCH_LEDGER_CAPTURE (a comma
// list of events, direct, kafka; default all three; kafka is skipped, with the reason printed,
// without KAFKA_BROKERS), BENCH_LEDGER_BACKLOG (pairs reserved but not yet captured, at
// most; default 2000), BENCH_LEDGER_KEY_LIMIT (1 = keys carry a spend limit,
// exercising the key_spend path; default 0), BENCH_DB_SERVER, KAFKA_BROKERS,
// KAFKA_TOPIC_PARTITIONS, KAFKA_TOPIC_REPLICATION (bench/kafka.ts).
import { cpus, loadavg, totalmem } from "node:os";
import { join } from "node:path";
import { writeFileSync, mkdirSync } from "node:fs";
import { createLogger } from "@orvado/core";
import { openDb, type Db } from "@orvado/db";
import type { KafkaSettings } from "@orvado/events";
import { topUp } from "../services/billing/src/top-up.ts";
import { createBenchDatabase } from "./database.ts";
import { benchKafka, describeKafka } from "./kafka.ts";
import { driveDirect, type Account, type PairOptions, type Timings } from "./ledger-pairs.ts";
import { startCapturePipeline, type CapturePipeline } from "./ledger-pipeline.ts";
import { RESULTS_DIR } from "./servers.ts";
import { fixed, formatTable, percentile, since } from "./stats.ts";

const WORKER_LEVELS = (process.env.BENCH_LEDGER_WORKERS ?? "32,64,128").split(",").map(Number);
if (WORKER_LEVELS.some((workers) => !Number.isInteger(workers) || workers < 1)) {
  throw new Error(`BENCH_LEDGER_WORKERS must list positive integers, not ${process.env.BENCH_LEDGER_WORKERS}`);
}
/** The SELECT 1 baseline always runs with 32 workers, so that it compares across runs and sessions. */
const BASELINE_WORKERS = 32;
const ACCOUNTS = Number(process.env.BENCH_LEDGER_ACCOUNTS ?? 1000);
const SECONDS = Number(process.env.BENCH_LEDGER_SECONDS ?? 20);
const KEY_LIMIT = process.env.BENCH_LEDGER_KEY_LIMIT === "1";
const BACKLOG = Number(process.env.BENCH_LEDGER_BACKLOG ?? 2000);
const CAPTURE_WAYS = {
  events: "captured as production does on the Postgres log: completed events through the stream, settled in batches by billing's consumer",
  direct: "captured one settle() call each (a consumer's path for an event that arrives alone)",
  kafka: "captured as production does on Kafka: completed events through Kafka (acks=all, idempotent producer), settled in batches by billing's consumer",
} as const;
type Capture = keyof typeof CAPTURE_WAYS;
const CAPTURES = (process.env.BENCH_LEDGER_CAPTURE ?? "events,direct,kafka").split(",").map((way) => way.trim());
if (CAPTURES.length === 0 || CAPTURES.some((way) => !(way in CAPTURE_WAYS))) {
  throw new Error(`BENCH_LEDGER_CAPTURE must list events, direct and/or kafka, not ${process.env.BENCH_LEDGER_CAPTURE}`);
}
const runs = (way: Capture) => CAPTURES.includes(way);
const WARMUP_SECONDS = 3;
const HOLD_TTL_MS = 15 * 60_000;
const started = Date.now();
const log = (message: string) => process.stderr.write(`[ledger ${since(started)}] ${message}\n`);

/**
 * The ceiling this machine puts on any ledger design: trivial statements per
 * second through the same pool and workers. A pair costs about 20 statements.
 */
async function roundTripsPerSecond(db: Db, seconds: number): Promise<number> {
  let count = 0;
  const until = performance.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: BASELINE_WORKERS }, async () => {
      for (; performance.now() < until; count += 1) await db.query("SELECT 1");
    }),
  );
  return count / seconds;
}

async function fundAccounts(db: Db): Promise<Account[]> {
  const accounts = Array.from({ length: ACCOUNTS }, (_, index) => ({ accountId: `acct_bench_${index}`, keyId: `key_bench_${index}` }));
  for (const account of accounts) {
    await topUp(db, { accountId: account.accountId, amountMicros: 100_000n * 1_000_000n, note: "bench", topUpId: `topup_${account.accountId}` });
  }
  return accounts;
}

/** The ledger must still add up: every hold captured whole, nothing released, nothing left on hold. */
async function checkBooks(db: Db) {
  const { rows } = await db.query<{ reserves: bigint; captures: bigint; releases: bigint; held: bigint; uncaptured: bigint }>(
    `SELECT count(*) FILTER (WHERE kind = 'reserve') AS reserves, count(*) FILTER (WHERE kind = 'capture') AS captures,
            count(*) FILTER (WHERE kind = 'release') AS releases, (SELECT coalesce(sum(held_micros), 0) FROM billing.balances) AS held,
            coalesce(sum(amount_micros) FILTER (WHERE kind = 'reserve'), 0) - coalesce(sum(amount_micros) FILTER (WHERE kind = 'capture'), 0) AS uncaptured
       FROM billing.ledger`,
  );
  const books = rows[0]!;
  const balanced = Number(books.reserves) === Number(books.captures) && BigInt(books.uncaptured) === 0n;
  if (!balanced || Number(books.releases) !== 0 || BigInt(books.held) !== 0n) {
    throw new Error(`books do not add up: ${books.captures} captures and ${books.releases} releases for ${books.reserves} holds, ${books.uncaptured} micros held but not captured, ${books.held} micros still held`);
  }
  return Number(books.captures);
}

const stats = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return { p50: percentile(sorted, 50), p90: percentile(sorted, 90), p99: percentile(sorted, 99), max: sorted.at(-1) ?? 0 };
};

interface WayResult {
  way: Capture;
  workers: number;
  timings: Timings;
  pairsPerSecond: number;
}

function report(result: WayResult): string {
  const { timings, way, workers, pairsPerSecond } = result;
  const rows: (string | number)[][] = [["phase", "p50 ms", "p90 ms", "p99 ms", "max ms"]];
  for (const [name, values] of [["reserve+capture", timings.pairs], ["reserve", timings.reserves], ["capture", timings.captures]] as const) {
    const s = stats(values);
    rows.push([name, fixed(s.p50), fixed(s.p90), fixed(s.p99), fixed(s.max)]);
  }
  return (
    `\n${CAPTURE_WAYS[way]}:\n${timings.pairs.length} pairs in ${fixed(timings.seconds, 1)} s with ${workers} workers over ${ACCOUNTS} accounts${KEY_LIMIT ? " (keys with limits)" : ""}: ` +
    `${fixed(pairsPerSecond, 0)} pairs/s; refusals ${timings.refusals}\n\n${formatTable(rows)}\n`
  );
}

async function measure(way: Capture, workers: number, drive: (seconds: number) => Promise<Timings>): Promise<WayResult> {
  log(`${way}: warming up ${WARMUP_SECONDS}s with ${workers} workers`);
  await drive(WARMUP_SECONDS);
  log(`${way}: measuring ${SECONDS}s with ${workers} workers`);
  const timings = await drive(SECONDS);
  return { way, workers, timings, pairsPerSecond: timings.pairs.length / timings.seconds };
}

/** One line per run: how the rate moves with the number of concurrent requests. */
function sweepTable(results: WayResult[]): string {
  const rows: (string | number)[][] = [["way", "workers", "pairs/s", "reserve p50 ms", "capture p50 ms"]];
  for (const { way, workers, timings, pairsPerSecond } of results) {
    rows.push([way, workers, fixed(pairsPerSecond, 0), fixed(stats(timings.reserves).p50), fixed(stats(timings.captures).p50)]);
  }
  return formatTable(rows);
}

/** The target is met or missed by the production way's highest rate; without that way, the highest there is. */
function headlineOf(results: WayResult[]): WayResult {
  const events = results.filter((result) => result.way === "events");
  return highestOf(events.length > 0 ? events : results)!;
}

function highestOf(results: WayResult[]): WayResult | null {
  return results.reduce<WayResult | null>((best, result) => (best && best.pairsPerSecond >= result.pairsPerSecond ? best : result), null);
}

function capacityLine(result: WayResult | null, where: string): string {
  if (!result) return "";
  return `capacity ${where}: ${fixed(result.pairsPerSecond, 0)} pairs/s, the production way's highest (${result.workers} workers; target ≥ 3000: ${result.pairsPerSecond >= 3000 ? "meets" : "misses"})\n`;
}

/** The production way at every worker level, draining the captures between levels. */
async function sweep(way: "events" | "kafka", pipeline: CapturePipeline, accounts: Account[], options: (workers: number) => PairOptions): Promise<WayResult[]> {
  const results: WayResult[] = [];
  for (const workers of WORKER_LEVELS) {
    results.push(await measure(way, workers, (seconds) => pipeline.eventPairs.drive(accounts, options(workers), seconds)));
    await pipeline.eventPairs.drain(60_000);
  }
  return results;
}

/** Kafka's settings, or (printed) why the Kafka way is not run. */
async function kafkaForRun(): Promise<{ settings: KafkaSettings | null; note: string }> {
  if (!runs("kafka")) return { settings: null, note: "kafka: not selected (BENCH_LEDGER_CAPTURE)" };
  const kafka = await benchKafka();
  if ("skipped" in kafka) {
    log(`kafka way skipped: ${kafka.skipped}`);
    return { settings: null, note: `kafka: skipped, ${kafka.skipped}` };
  }
  return { settings: kafka.settings, note: `kafka: ${describeKafka(kafka.settings)}` };
}

async function main() {
  const database = await createBenchDatabase();
  const logger = createLogger("ledger-bench", process.env.BENCH_LOG_LEVEL ?? "warn");
  // The production way shares its statements (SharedCalls), so few connections serve any
  // number of workers; the direct way and the baseline want one each, up to 64 (PostgreSQL's
  // default max_connections is 100). A few more for the relays and billing's consumer.
  const db = await openDb(database.url, { maxConnections: Math.min(Math.max(BASELINE_WORKERS, ...WORKER_LEVELS), 64) + 6 });
  const kafka = await kafkaForRun();
  const startPipeline = (settings?: KafkaSettings) => startCapturePipeline({ db, databaseUrl: database.url, logger, backlog: BACKLOG, kafka: settings });
  const options = (workers: number): PairOptions => ({ workers, keyLimit: KEY_LIMIT, holdTtlMs: HOLD_TTL_MS });
  // Billing's migrations run when its first pipeline starts; the accounts are funded after that.
  let pipeline: CapturePipeline | null = await startPipeline(runs("events") || runs("direct") || !kafka.settings ? undefined : kafka.settings);
  try {
    log(`funding ${ACCOUNTS} accounts`);
    const accounts = await fundAccounts(db);
    const baseline = await roundTripsPerSecond(db, 3);
    log(`baseline: ${fixed(baseline, 0)} SELECT 1 round trips/s with ${BASELINE_WORKERS} workers`);
    const results: WayResult[] = [];
    if (pipeline.stream === "postgres") {
      if (runs("events")) results.push(...(await sweep("events", pipeline, accounts, options)));
      const directWorkers = WORKER_LEVELS[0]!;
      if (runs("direct")) results.push(await measure("direct", directWorkers, (seconds) => driveDirect(db, accounts, options(directWorkers), seconds)));
      if (kafka.settings) {
        await pipeline.stop();
        pipeline = null;
        pipeline = await startPipeline(kafka.settings);
      }
    }
    if (pipeline.stream === "kafka") results.push(...(await sweep("kafka", pipeline, accounts, options)));
    await pipeline.stop();
    pipeline = null;
    if (results.length === 0) throw new Error(`nothing was measured (BENCH_LEDGER_CAPTURE=${CAPTURES.join(",")}; ${kafka.note})`);
    const captures = await checkBooks(db);
    const headline = headlineOf(results);
    const onKafka = highestOf(results.filter((result) => result.way === "kafka"));
    process.stdout.write(
      `${results.map(report).join("")}\n${sweepTable(results)}\n\n` +
        (headline.way === "events" ? capacityLine(headline, "on the Postgres log") : "") +
        capacityLine(onKafka, "on Kafka") +
        `${kafka.note}\n` +
        `books balanced: ${captures} holds, each captured once, nothing released or left on hold\n` +
        `baseline on this machine: ${fixed(baseline, 0)} "SELECT 1" round trips/s with the same pool and ${BASELINE_WORKERS} workers\n`,
    );
    mkdirSync(RESULTS_DIR, { recursive: true });
    const file = join(RESULTS_DIR, `ledger-${new Date().toISOString().replace(/[:.]/g, "-")}.json`);
    const runsJson = results.map(({ way, workers, timings, pairsPerSecond }) => ({
      way,
      workers,
      seconds: timings.seconds,
      pairs: timings.pairs.length,
      pairsPerSecond,
      latencyMs: { pairs: stats(timings.pairs), reserve: stats(timings.reserves), capture: stats(timings.captures) },
    }));
    const kafkaJson = kafka.settings
      ? { settings: { ...kafka.settings, acks: "all", idempotentProducer: true }, workers: onKafka?.workers ?? null, pairsPerSecond: onKafka?.pairsPerSecond ?? null }
      : { skipped: kafka.note };
    writeFileSync(
      file,
      JSON.stringify(
        {
          when: new Date().toISOString(),
          machine: { cpus: cpus().length, cpuModel: cpus()[0]?.model, memoryBytes: totalmem(), loadAverage: loadavg() },
          workers: headline.workers,
          workerLevels: WORKER_LEVELS,
          accounts: ACCOUNTS,
          keyLimit: KEY_LIMIT,
          backlog: BACKLOG,
          capture: headline.way,
          pairsPerSecond: headline.pairsPerSecond,
          kafka: kafkaJson,
          selectOneRoundTripsPerSecond: baseline,
          baselineWorkers: BASELINE_WORKERS,
          runs: runsJson,
        },
        null,
        2,
      ),
    );
    log(`wrote ${file}`);
  } finally {
    await pipeline?.stop();
    await db.close();
    await database.drop();
  }
}

await main();
