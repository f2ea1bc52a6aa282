import type { Logger } from "@orvado/core";
import { prepareStatement, type Db, type Queryable } from "@orvado/db";
import { handledAsOneBatch, MAX_BATCH_MESSAGES } from "./batch-call.ts";
import { tryLocalLock } from "./local-lock.ts";
import { Alarm, Backoff, deferred, delay, sleepThenLinger } from "./timing.ts";
import { asBytes, type SubscribeOptions, type Subscription } from "./types.ts";

const COMMIT_OFFSET = prepareStatement(
  `UPDATE stream.consumer_offsets SET committed_offset = $3, committed_at = now() WHERE "group" = $1 AND topic = $2`,
);
const CLAIM_AND_READ = prepareStatement(`
  SELECT claim.committed_offset, message."offset", message.key, message.id, message.value
    FROM (SELECT committed_offset FROM stream.consumer_offsets WHERE "group" = $1 AND topic = $2 FOR UPDATE SKIP LOCKED) AS claim
    LEFT JOIN LATERAL (
      SELECT "offset", key, id, value FROM stream.messages
       WHERE topic = $2 AND "offset" > claim.committed_offset ORDER BY "offset" LIMIT ${MAX_BATCH_MESSAGES}
    ) AS message ON true
   ORDER BY message."offset"`);

interface MessageRow {
  offset: bigint;
  key: string;
  id: string;
  value: Uint8Array;
}

type ClaimedRow = { committed_offset: bigint } & { [K in keyof MessageRow]: MessageRow[K] | null };

interface BatchResult {
  read: number;
  failure?: { error: unknown; row: MessageRow };
}

export interface LogConsumerOptions extends SubscribeOptions {
  db: Db;
  logger: Logger;
  pollMs: number;
  /** How long to wait once woken before a round (timing.ts DEFAULT_LINGER_MS). */
  lingerMs: number;
  /** Rung by publishes and notifications for this topic. */
  alarm: Alarm;
}

/**
 * One consumer of a group on the Postgres log. Each round claims the group
 * (so two consumers of a group never handle the same message at once), handles
 * the next batch in offset order and commits the offset of the last message
 * handled, all under the claim. A crash before the commit redelivers the batch.
 */
export async function startLogConsumer(options: LogConsumerOptions): Promise<Subscription> {
  const { db, topic, group } = options;
  await db.query(`INSERT INTO stream.consumer_offsets ("group", topic) VALUES ($1, $2) ON CONFLICT DO NOTHING`, [group, topic]);
  const consumer = new LogConsumer(options);
  const loop = consumer.run().catch((error: unknown) => consumer.logger.error({ err: error }, "event consumer loop died"));
  return {
    async stop() {
      consumer.stop();
      await loop;
    },
  };
}

class LogConsumer {
  readonly logger: Logger;
  private stopping = false;
  private readonly stopped = deferred();

  constructor(private readonly options: LogConsumerOptions) {
    this.logger = options.logger.child({ topic: options.topic, group: options.group });
  }

  stop(): void {
    this.stopping = true;
    this.stopped.resolve();
    this.options.alarm.ring();
  }

  /** Rounds until stopped: a failed database round or a failing message waits a growing backoff. */
  async run(): Promise<void> {
    const { alarm, pollMs, lingerMs } = this.options;
    const backoff = new Backoff();
    let failing: { id: string; attempt: number } | null = null;
    while (!this.stopping) {
      let result: BatchResult | null;
      try {
        result = await this.claimAndHandle();
      } catch (error) {
        // The database itself failed (connection lost, …): nothing was committed, try again later.
        const waitMs = backoff.next();
        this.logger.error({ err: error, retryInMs: waitMs }, "event consumer round failed");
        await delay(waitMs, this.stopped.promise);
        continue;
      }
      if (result === null || result.read === 0) {
        await sleepThenLinger(alarm, pollMs, lingerMs, this.stopped.promise);
      } else if (result.failure) {
        const { error, row } = result.failure;
        // The backoff grows while one message keeps failing; a new culprit starts over.
        if (failing === null || failing.id !== row.id) {
          failing = { id: row.id, attempt: 0 };
          backoff.reset();
        }
        failing.attempt += 1;
        const waitMs = backoff.next();
        this.logger.warn(
          { err: error, eventId: row.id, offset: row.offset.toString(), attempt: failing.attempt, retryInMs: waitMs },
          "event handler failed; the message will be redelivered",
        );
        await delay(waitMs, this.stopped.promise);
      } else {
        failing = null;
        backoff.reset();
        // A short batch was the end of the log: sleep until a publish rings (a ring
        // during the batch is remembered), rather than spend a round finding nothing.
        if (result.read < MAX_BATCH_MESSAGES) await sleepThenLinger(alarm, pollMs, lingerMs, this.stopped.promise);
      }
    }
  }

  /** null: another consumer of the group holds it right now. */
  private async claimAndHandle(): Promise<BatchResult | null> {
    const { db, group, topic } = this.options;
    if (db.kind === "pglite") {
      const release = tryLocalLock(db, `stream-group\u0000${group}\u0000${topic}`);
      if (!release) return null;
      try {
        const committed = await this.committedOffset(db);
        return await this.handleBatch(db, committed, await this.readBatch(db, committed));
      } finally {
        release();
      }
    }
    // On a server the claim is the row lock on the group's offset, held by the
    // transaction that also commits the new offset; other processes skip it.
    // The offset's commit need not wait for the disk: a lost offset only redelivers
    // messages, which consumers must tolerate anyway (at least once).
    return db.tx(
      async (q) => {
        // The claim and the batch after it in one round trip: no row means not claimed,
        // one row with a null offset means claimed with nothing new.
        const { rows } = await q.query<ClaimedRow>(CLAIM_AND_READ, [group, topic]);
        const first = rows[0];
        if (!first) return null;
        const messages = first.offset === null ? [] : (rows as MessageRow[]);
        return this.handleBatch(q, BigInt(first.committed_offset), messages);
      },
      { durable: false },
    );
  }

  /** Hands the batch over whole when the handler takes batches, else message by message up to the first failure; commits what was handled. */
  private async handleBatch(q: Queryable, committed: bigint, rows: MessageRow[]): Promise<BatchResult> {
    const { options, logger } = this;
    const { handle } = options;
    let last = committed;
    let failure: BatchResult["failure"];
    if (await handledAsOneBatch(options, rows, this.delivered, this.stopping, logger)) {
      last = rows[rows.length - 1]!.offset;
    } else {
      for (const row of rows) {
        if (this.stopping) break;
        try {
          await handle(this.delivered(row));
          last = row.offset;
        } catch (error) {
          failure = { error, row };
          break;
        }
      }
    }
    if (last > committed) await q.query(COMMIT_OFFSET, [options.group, options.topic, last.toString()]);
    return { read: rows.length, failure };
  }

  private readonly delivered = (row: MessageRow) => ({ topic: this.options.topic, id: row.id, key: row.key, value: asBytes(row.value) });

  private async readBatch(q: Queryable, committed: bigint): Promise<MessageRow[]> {
    const { rows } = await q.query<MessageRow>(
      `SELECT "offset", key, id, value FROM stream.messages WHERE topic = $1 AND "offset" > $2 ORDER BY "offset" LIMIT ${MAX_BATCH_MESSAGES}`,
      [this.options.topic, committed.toString()],
    );
    return rows;
  }

  private async committedOffset(q: Queryable): Promise<bigint> {
    const result = await q.query<{ committed_offset: bigint }>(
      `SELECT committed_offset FROM stream.consumer_offsets WHERE "group" = $1 AND topic = $2`,
      [this.options.group, this.options.topic],
    );
    return BigInt(result.rows[0]?.committed_offset ?? 0n);
  }
}
