import type { Logger } from "@orvado/core";
import { randomUUID } from "node:crypto";
import { prepareStatement, type Db } from "@orvado/db";
import { startLogConsumer } from "./postgres-log-consumer.ts";
import { STREAM_CHANNEL, ensureStreamSchema } from "./postgres-log-schema.ts";
import { Alarm, DEFAULT_LINGER_MS } from "./timing.ts";
import type { EventStream, OutgoingMessage, SubscribeOptions, Subscription } from "./types.ts";
import { waitForGroup } from "./wait-for-group.ts";

const APPEND = prepareStatement("SELECT stream.append($1, $2::text[], $3::text[], $4::bytea[], $5)");

// Names each Db's publishes in their notifications (stream.append's origin).
const origins = new WeakMap<Db, string>();

function originOf(db: Db): string {
  let origin = origins.get(db);
  if (!origin) {
    origin = randomUUID();
    origins.set(db, origin);
  }
  return origin;
}

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
export async function openPostgresLog(options: { db: Db; logger: Logger; pollMs?: number; lingerMs?: number }): Promise<EventStream> {
  const { db } = options;
  const logger = options.logger.child({ stream: "postgres" });
  const pollMs = options.pollMs ?? 250;
  const lingerMs = options.lingerMs ?? DEFAULT_LINGER_MS;
  await ensureStreamSchema(db);
  const origin = originOf(db);
  const unlisten = await db.listen(STREAM_CHANNEL, (payload) => {
    const [topic = "", from] = payload.split("\n");
    // This Db's own publishes have already rung its consumers, directly.
    if (from !== origin) ringTopic(db, topic);
  });
  const subscriptions = new Set<Subscription>();
  let closed = false;

  async function publish(topic: string, messages: OutgoingMessage[]): Promise<void> {
    if (messages.length === 0) return;
    // One statement (stream.append): the topic's turn, the rows and the notification.
    await db.query(APPEND, [
      topic,
      messages.map((message) => message.key),
      messages.map((message) => message.id),
      messages.map((message) => Buffer.from(message.value.buffer, message.value.byteOffset, message.value.byteLength)),
      origin,
    ]);
    ringTopic(db, topic);
  }

  async function subscribe(subscribeOptions: SubscribeOptions): Promise<Subscription> {
    if (closed) throw new Error("event stream is closed");
    const alarm = new Alarm();
    const alarms = alarmsFor(db, subscribeOptions.topic);
    alarms.add(alarm);
    let consumer: Subscription;
    try {
      consumer = await startLogConsumer({ ...subscribeOptions, db, logger, pollMs, lingerMs, alarm });
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
    waitForGroup: (topic, group, options) => waitForGroup(db, topic, group, options),
    async close() {
      closed = true;
      await Promise.all([...subscriptions].map((subscription) => subscription.stop()));
      await unlisten();
    },
  };
}
