import type { Logger } from "@orvado/core";
import type { Db } from "@orvado/db";
import { startLogConsumer } from "./postgres-log-consumer.ts";
import { ADVISORY_NAMESPACE, STREAM_CHANNEL, ensureStreamSchema } from "./postgres-log-schema.ts";
import { Alarm } from "./timing.ts";
import type { EventStream, OutgoingMessage, SubscribeOptions, Subscription } from "./types.ts";

// Rows per INSERT: 4 parameters each, far below PostgreSQL's 65535 limit.
const INSERT_CHUNK = 500;

// Every stream opened on one Db in this process, so a publish wakes all of
// their consumers at once, without waiting for the notification round trip.
const alarmsByDb = new WeakMap<Db, Map<string, Set<Alarm>>>();

function alarmsFor(db: Db, topic: string): Set<Alarm> {
  let byTopic = alarmsByDb.get(db);
  if (!byTopic) {
    byTopic = new Map();
    alarmsByDb.set(db, byTopic);
  }
  let alarms = byTopic.get(topic);
  if (!alarms) {
    alarms = new Set();
    byTopic.set(topic, alarms);
  }
  return alarms;
}

function ringTopic(db: Db, topic: string): void {
  for (const alarm of alarmsByDb.get(db)?.get(topic) ?? []) alarm.ring();
}

/**
 * The embedded event stream: an append-only table in the schema `stream`.
 * Consumers wake on NOTIFY (other processes) or directly (this process), and
 * poll every pollMs as well, so a lost notification only delays delivery.
 */
export async function openPostgresLog(options: { db: Db; logger: Logger; pollMs?: number }): Promise<EventStream> {
  const { db } = options;
  const logger = options.logger.child({ stream: "postgres" });
  const pollMs = options.pollMs ?? 250;
  await ensureStreamSchema(db);
  const unlisten = await db.listen(STREAM_CHANNEL, (topic) => ringTopic(db, topic));
  const subscriptions = new Set<Subscription>();
  let closed = false;

  async function publish(topic: string, messages: OutgoingMessage[]): Promise<void> {
    if (messages.length === 0) return;
    await db.tx(async (q) => {
      // Publishers of a topic take turns until commit, so offsets become visible
      // in increasing order: a consumer that has read offset N can never later
      // find a smaller offset committed behind it.
      await q.query(`SELECT pg_advisory_xact_lock(${ADVISORY_NAMESPACE}, hashtext($1))`, [topic]);
      for (let start = 0; start < messages.length; start += INSERT_CHUNK) {
        const chunk = messages.slice(start, start + INSERT_CHUNK);
        const params: unknown[] = [];
        const rows = chunk.map((message) => {
          params.push(topic, message.key, message.id, Buffer.from(message.value.buffer, message.value.byteOffset, message.value.byteLength));
          const n = params.length;
          return `($${n - 3}, $${n - 2}, $${n - 1}, $${n}::bytea)`;
        });
        await q.query(`INSERT INTO stream.messages (topic, key, id, value) VALUES ${rows.join(", ")}`, params);
      }
      await q.query("SELECT pg_notify($1, $2)", [STREAM_CHANNEL, topic]);
      // Not waiting for the WAL flush is safe: every event published here is still
      // in its producer's outbox, which is marked sent only by a later commit, and a
      // crash loses a suffix of the WAL, never a hole. It also frees the topic's lock
      // without a disk wait, which is what let publishers queue behind each other.
    }, { durable: false });
    ringTopic(db, topic);
  }

  async function subscribe(subscribeOptions: SubscribeOptions): Promise<Subscription> {
    if (closed) throw new Error("event stream is closed");
    const alarm = new Alarm();
    const alarms = alarmsFor(db, subscribeOptions.topic);
    alarms.add(alarm);
    let consumer: Subscription;
    try {
      consumer = await startLogConsumer({ ...subscribeOptions, db, logger, pollMs, alarm });
    } catch (error) {
      alarms.delete(alarm);
      throw error;
    }
    const subscription: Subscription = {
      async stop() {
        await consumer.stop();
        alarms.delete(alarm);
        subscriptions.delete(subscription);
      },
    };
    subscriptions.add(subscription);
    return subscription;
  }

  return {
    name: "postgres",
    publish,
    subscribe,
    async close() {
      closed = true;
      await Promise.all([...subscriptions].map((subscription) => subscription.stop()));
      await unlisten();
    },
  };
}
