// The two ways `npm run bench:ledger` drives reserve+capture pairs through billing's own code.
//
// - events (what production does): workers reserve as billing's Reserve RPC
//   does, then write each request's `completed` event into generation's outbox as the
//   job's outcome statement does; generation's relay publishes it and billing's settlement
//   consumer captures it in a batch (settleBatch), behind the request, as in production.
//   The stream is the Postgres log or Kafka (bench/ledger-pipeline.ts); the Kafka adapter
//   hands billing batches the same way (kafka-batch.ts). A pair counts when billing reports
//   its capture.
// - direct: each worker reserves, then captures with one settle() call of its own: a
//   consumer's path for an event that arrives alone, and what this benchmark measured
//   before the eleventh session.
import { randomUUID } from "node:crypto";
import { SharedCalls } from "@orvado/core";
import type { Db } from "@orvado/db";
import { BILLING_TOPIC, billingEventMessage, outboxInsert, type OutboxRelay, type OutgoingMessage } from "@orvado/events";
import { Tier } from "@orvado/proto";
import { reserve } from "../services/billing/src/reserve.ts";
import { settle, type SettleResult } from "../services/billing/src/settle.ts";

export interface Account {
  accountId: string;
  keyId: string;
}

export interface PairOptions {
  workers: number;
  keyLimit: boolean;
  holdTtlMs: number;
}

export interface Timings {
  /** Reserve start to capture, per pair captured in the window. */
  pairs: number[];
  reserves: number[];
  captures: number[];
  refusals: number;
  seconds: number;
}

/** One beta 1K image: the reservation a typical request makes. */
async function reserveOne(db: Db, account: Account, options: PairOptions): Promise<string | null> {
  const requestId = `req_${randomUUID().replaceAll("-", "")}`;
  const keyLimitMicros = options.keyLimit ? 1_000_000n * 1_000_000n : undefined;
  const outcome = await reserve(
    db,
    { requestId, ...account, keyLimitMicros, model: "beta", tier: Tier.TIER_1K, size: "1024x1024", imagesRequested: 1 },
    options.holdTtlMs,
  );
  return "hold" in outcome ? requestId : null;
}

function recordPair(timings: Timings, start: number, reserved: number, end: number) {
  timings.pairs.push(end - start);
  timings.reserves.push(reserved - start);
  timings.captures.push(end - reserved);
}

/** Runs `turn` on every worker until the window closes; each worker walks its own stride of accounts, so parallel pairs rarely wait on one account's row lock. */
async function eachWorker(accounts: Account[], options: PairOptions, seconds: number, turn: (account: Account) => Promise<void>) {
  const until = performance.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: options.workers }, async (_, worker) => {
      for (let step = 0; performance.now() < until; step += 1) await turn(accounts[(worker + step * options.workers) % accounts.length]!);
    }),
  );
}

/** The direct way: reserve, then settle() alone. */
export async function driveDirect(db: Db, accounts: Account[], options: PairOptions, seconds: number): Promise<Timings> {
  const timings: Timings = { pairs: [], reserves: [], captures: [], refusals: 0, seconds: 0 };
  const begin = performance.now();
  await eachWorker(accounts, options, seconds, async (account) => {
    const start = performance.now();
    const requestId = await reserveOne(db, account, options);
    const reserved = performance.now();
    if (requestId === null) {
      timings.refusals += 1;
      return;
    }
    const result = await settle(db, requestId, { kind: "completed", imagesDelivered: 1 });
    if (result !== "applied") throw new Error(`settle ${requestId}: ${result}`);
    recordPair(timings, start, reserved, performance.now());
  });
  timings.seconds = (performance.now() - begin) / 1000;
  return timings;
}

interface OpenPair {
  start: number;
  reserved: number;
}

/**
 * The production way. Captures run behind the requests, so the pairs not yet
 * captured are bounded (`backlog`): at the bound, workers wait, which keeps the run
 * in a steady state where pairs are reserved as fast as they are captured. The
 * window counts the pairs captured inside it; the caller waits for the rest.
 */
export class EventPairs {
  /** Pairs not yet captured, by their `completed` event's id (what billing reports). */
  readonly #open = new Map<string, OpenPair>();
  readonly #slotFreed: (() => void)[] = [];
  #allCaptured: (() => void) | null = null;
  #window: Timings | null = null;
  #failures: string[] = [];
  readonly #completedWriter: SharedCalls<OutgoingMessage, void>;

  constructor(
    private readonly db: Db,
    relay: OutboxRelay,
    private readonly backlog: number,
  ) {
    // Concurrent outcomes go into the outbox in one INSERT, as generation's jobSuccessWriter sends them.
    this.#completedWriter = new SharedCalls<OutgoingMessage, void>(async (messages) => {
      const insert = outboxInsert("generation", messages.map((message) => ({ topic: BILLING_TOPIC, message })));
      await db.query(insert.sql, insert.params);
      relay.poke();
      return messages.map(() => undefined);
    });
  }

  /** Billing's settlement observer (startBilling's onSettled). */
  readonly onSettled = (eventId: string, result: SettleResult) => {
    const pair = this.#open.get(eventId);
    if (!pair) return;
    if (result !== "applied") this.#failures.push(`${eventId}: ${result}`);
    this.#open.delete(eventId);
    this.#slotFreed.shift()?.();
    if (this.#window) recordPair(this.#window, pair.start, pair.reserved, performance.now());
    if (this.#open.size === 0) this.#allCaptured?.();
  };

  async drive(accounts: Account[], options: PairOptions, seconds: number): Promise<Timings> {
    const timings: Timings = { pairs: [], reserves: [], captures: [], refusals: 0, seconds: 0 };
    this.#window = timings;
    const begin = performance.now();
    await eachWorker(accounts, options, seconds, async (account) => {
      while (this.#open.size >= this.backlog) await new Promise<void>((resolve) => this.#slotFreed.push(resolve));
      const start = performance.now();
      const requestId = await reserveOne(this.db, account, options);
      if (requestId === null) {
        timings.refusals += 1;
        return;
      }
      const completed = billingEventMessage({ requestId, ...account }, { case: "completed", value: { imagesDelivered: 1 } });
      this.#open.set(completed.id, { start, reserved: performance.now() });
      await this.#completedWriter.call(completed);
    });
    timings.seconds = (performance.now() - begin) / 1000;
    this.#window = null;
    this.#throwOnFailure();
    return timings;
  }

  /** Resolves once every pair reserved so far has been captured. */
  async drain(timeoutMs: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    try {
      await new Promise<void>((resolve, reject) => {
        if (this.#open.size === 0) return resolve();
        this.#allCaptured = resolve;
        timer = setTimeout(() => reject(new Error(`${this.#open.size} pairs still uncaptured after ${timeoutMs} ms`)), timeoutMs);
      });
    } finally {
      clearTimeout(timer);
      this.#allCaptured = null;
    }
    this.#throwOnFailure();
  }

  #throwOnFailure() {
    if (this.#failures.length > 0) throw new Error(`captures not applied: ${this.#failures.slice(0, 5).join(", ")}`);
  }
}
