import type { Logger } from "@orvado/core";
import { prepareStatement, type Db, type Queryable } from "@orvado/db";
import { tryLocalLock } from "./local-lock.ts";
import { outboxTable } from "./outbox.ts";
import { ADVISORY_NAMESPACE } from "./postgres-log-schema.ts";
import { Alarm, Backoff, DEFAULT_LINGER_MS, deferred, delay, sleepThenLinger } from "./timing.ts";
import { asBytes, type EventStream, type OutgoingMessage } from "./types.ts";

const BATCH_SIZE = 200;

export interface OutboxRelay {
  /** Publish soon: call right after a transaction that enqueued events commits. */
  poke(): void;
  /** Resolves once every row committed before the call has been published (by any relay). */
  flush(options?: { timeoutMs?: number }): Promise<void>;
  /** Stops after the batch in hand. */
  stop(): Promise<void>;
}

interface OutboxRow {
  seq: bigint;
  topic: string;
  key: string;
  event_id: string;
  value: Uint8Array;
}

export interface OutboxRelayOptions {
  db: Db;
  schema: string;
  stream: EventStream;
  logger: Logger;
  pollMs?: number;
  lingerMs?: number;
}

/**
 * Publishes unsent outbox rows in order, then deletes them: the stream keeps the
 * published copy, and a delete leaves no new row version or index entry behind
 * (an UPDATE of sent_at cost both, per event). A publish that fails, or a crash
 * before the delete, publishes the rows again later: delivery is at least once.
 * Relays of one outbox (replicas) take turns, one batch at a time, so rows go
 * out in their outbox order and never twice at the same time.
 */
export function startOutboxRelay(options: OutboxRelayOptions): OutboxRelay {
  const relay = new Relay(options);
  relay.start();
  return relay;
}

/** The statements of one outbox table. */
function relayStatements(table: string) {
  const unsentWhere = (condition: string) =>
    `SELECT seq, topic, key, event_id, value FROM ${table} WHERE ${condition} ORDER BY seq LIMIT ${BATCH_SIZE} FOR UPDATE SKIP LOCKED`;
  return {
    unsent: unsentWhere("sent_at IS NULL"),
    // The turn and the batch in one round trip: no turn gives one row with mine false.
    turnAndUnsent: prepareStatement(
      `SELECT turn.mine, batch.* FROM (SELECT pg_try_advisory_xact_lock(${ADVISORY_NAMESPACE}, hashtext('${table}')) AS mine) AS turn
       LEFT JOIN LATERAL (${unsentWhere("turn.mine AND sent_at IS NULL")}) AS batch ON true ORDER BY batch.seq`,
    ),
    deleteSent: prepareStatement(`DELETE FROM ${table} WHERE seq = ANY($1::bigint[])`),
  };
}

class Relay implements OutboxRelay {
  private readonly db: Db;
  private readonly schema: string;
  private readonly stream: EventStream;
  private readonly table: string;
  private readonly statements: ReturnType<typeof relayStatements>;
  private readonly pollMs: number;
  private readonly lingerMs: number;
  private readonly logger: Logger;
  private readonly alarm = new Alarm();
  private stopping = false;
  private readonly stopped = deferred();
  /** Flushes waiting in this process re-check after every round. */
  private roundDone = deferred();
  private loop: Promise<void> = Promise.resolve();

  constructor(options: OutboxRelayOptions) {
    this.db = options.db;
    this.schema = options.schema;
    this.stream = options.stream;
    this.table = outboxTable(options.schema);
    this.statements = relayStatements(this.table);
    this.pollMs = options.pollMs ?? 250;
    this.lingerMs = options.lingerMs ?? DEFAULT_LINGER_MS;
    this.logger = options.logger.child({ outbox: options.schema });
  }

  start(): void {
    this.loop = this.run().catch((error: unknown) => this.logger.error({ err: error }, "outbox relay loop died"));
  }

  /** An arrow, so that it can be handed over on its own (as the closure it replaced could). */
  readonly poke = (): void => this.alarm.ring();

  async flush(flushOptions: { timeoutMs?: number } = {}): Promise<void> {
    const deadline = Date.now() + (flushOptions.timeoutMs ?? Number.POSITIVE_INFINITY);
    const last = await this.db.query<{ seq: bigint | null }>(`SELECT max(seq) AS seq FROM ${this.table}`);
    const target = last.rows[0]?.seq;
    if (target === null || target === undefined) return;
    this.alarm.ring();
    while (await this.hasUnsentUpTo(BigInt(target))) {
      if (this.stopping) throw new Error(`outbox relay for ${this.schema} stopped before the flush completed`);
      if (Date.now() >= deadline) throw new Error(`outbox relay for ${this.schema} did not flush within ${flushOptions.timeoutMs} ms`);
      this.alarm.ring();
      // Another replica may be the one publishing: re-check at least every 20 ms.
      await delay(20, this.roundDone.promise);
    }
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.stopped.resolve();
    this.alarm.ring();
    await this.loop;
  }

  private async run(): Promise<void> {
    const backoff = new Backoff();
    while (!this.stopping) {
      let published: number | null;
      try {
        published = await this.round();
        backoff.reset();
      } catch (error) {
        const waitMs = backoff.next();
        this.logger.error({ err: error, retryInMs: waitMs }, "outbox relay round failed; rows stay unsent and are retried");
        await delay(waitMs, this.stopped.promise);
        continue;
      } finally {
        const done = this.roundDone;
        this.roundDone = deferred();
        done.resolve();
      }
      if (published === null) await delay(25, this.stopped.promise); // another relay's batch is short: look again soon
      else if (published < BATCH_SIZE) await sleepThenLinger(this.alarm, this.pollMs, this.lingerMs, this.stopped.promise);
    }
  }

  /** Rows published, or null when another relay holds the outbox right now. */
  private async round(): Promise<number | null> {
    const { db } = this;
    if (db.kind === "pglite") {
      // No transaction around the publish here: on PGlite it would block the stream's own writes.
      const release = tryLocalLock(db, `outbox\u0000${this.schema}`);
      if (!release) return null;
      try {
        return await this.publishBatch(db, (await db.query<OutboxRow>(this.statements.unsent)).rows);
      } finally {
        release();
      }
    }
    // The row locks (FOR UPDATE SKIP LOCKED) are held until the rows are deleted;
    // the advisory lock makes relays take turns so that order is kept across replicas.
    // The delete need not wait for the disk: if a crash loses it the rows are
    // published again, and consumers are idempotent on the event id.
    return db.tx(
      async (q) => {
        const { rows } = await q.query<{ mine: boolean } & OutboxRow>(this.statements.turnAndUnsent);
        if (!rows[0]?.mine) return null;
        return this.publishBatch(q, rows[0].seq === null ? [] : rows);
      },
      { durable: false },
    );
  }

  private async publishBatch(q: Queryable, rows: OutboxRow[]): Promise<number> {
    for (const run of runsOfOneTopic(rows)) await this.stream.publish(run.topic, run.messages);
    if (rows.length > 0) await q.query(this.statements.deleteSent, [rows.map((row) => row.seq.toString())]);
    return rows.length;
  }

  private async hasUnsentUpTo(seq: bigint): Promise<boolean> {
    const result = await this.db.query<{ pending: boolean }>(
      `SELECT EXISTS (SELECT 1 FROM ${this.table} WHERE sent_at IS NULL AND seq <= $1) AS pending`,
      [seq.toString()],
    );
    return Boolean(result.rows[0]?.pending);
  }
}

/** Splits rows into consecutive runs of one topic, each published as one call, order kept. */
function runsOfOneTopic(rows: OutboxRow[]): { topic: string; messages: OutgoingMessage[] }[] {
  const runs: { topic: string; messages: OutgoingMessage[] }[] = [];
  for (const row of rows) {
    const message = { id: row.event_id, key: row.key, value: asBytes(row.value) };
    const last = runs[runs.length - 1];
    if (last && last.topic === row.topic) last.messages.push(message);
    else runs.push({ topic: row.topic, messages: [message] });
  }
  return runs;
}
