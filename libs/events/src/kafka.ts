import type { Logger } from "@orvado/core";
import kafkajs from "kafkajs";
import type { Consumer, Kafka as KafkaClient } from "kafkajs";
import { EVENT_ID_HEADER, kafkaBatchHandler } from "./kafka-batch.ts";
import { kafkaLogCreator } from "./kafka-log.ts";
import { groupByPartition } from "./kafka-partitions.ts";
import { fixKafkajsRequestQueue } from "./kafkajs-request-queue.ts";
import { Backoff, DEFAULT_LINGER_MS, deferred } from "./timing.ts";
import type { KafkaSettings } from "./kafka-settings.ts";
import { kafkaTopics } from "./kafka-topics.ts";
import { waitForKafkaGroup } from "./kafka-group-lag.ts";
import type { EventStream, OutgoingMessage, SubscribeOptions, Subscription } from "./types.ts";

/** What a consumer's fetch waits at the broker to gather (up to DEFAULT_LINGER_MS): a few hundred events. */
const FETCH_MIN_BYTES = 64 * 1024;

const { Kafka, Partitioners } = kafkajs;

// Before any connection is opened: kafkajs's idle connections otherwise spin a 1-ms timer.
fixKafkajsRequestQueue();

export interface KafkaStreamOptions {
  settings: KafkaSettings;
  clientId: string;
  logger: Logger;
}

/**
 * The production event stream. Messages are keyed by account, so one key
 * lives in one partition and is consumed in order; the event id travels in a
 * header. Offsets are committed only for messages whose handler resolved.
 */
export async function openKafkaStream(options: KafkaStreamOptions): Promise<EventStream> {
  const logger = options.logger.child({ stream: "kafka" });
  const { settings } = options;
  const kafka = new Kafka({ clientId: options.clientId, brokers: settings.brokers, logCreator: kafkaLogCreator(logger) });
  // Idempotent producer: a retried send is written once, in order, per partition.
  const producer = kafka.producer({
    idempotent: true,
    maxInFlightRequests: 1,
    allowAutoTopicCreation: false,
    createPartitioner: Partitioners.DefaultPartitioner,
  });
  const admin = kafka.admin();
  await admin.connect();
  try {
    await producer.connect();
  } catch (error) {
    await admin.disconnect().catch(() => {});
    throw error;
  }
  const topics = kafkaTopics(admin, settings, logger);
  const subscriptions = new Set<Subscription>();
  let closed = false;

  return {
    name: "kafka",
    async publish(topic: string, messages: OutgoingMessage[]) {
      if (messages.length === 0) return;
      const name = await topics.ensure(topic);
      // One partition per send(), so that a leader's failover cannot lose messages (kafka-partitions.ts).
      for (const [partition, group] of groupByPartition(name, messages, await topics.partitions(name))) {
        await producer.send({
          topic: name,
          acks: -1,
          messages: group.map((message) => ({
            partition,
            key: message.key,
            value: Buffer.from(message.value.buffer, message.value.byteOffset, message.value.byteLength),
            headers: { [EVENT_ID_HEADER]: message.id },
          })),
        });
      }
    },
    async subscribe(subscribeOptions: SubscribeOptions) {
      if (closed) throw new Error("event stream is closed");
      const consumer = await startKafkaConsumer(kafka, {
        ...subscribeOptions,
        topic: await topics.ensure(subscribeOptions.topic),
        group: topics.groupName(subscribeOptions.group),
        logicalTopic: subscribeOptions.topic,
        sessionTimeoutMs: settings.sessionTimeoutMs,
      }, logger);
      const subscription: Subscription = {
        async stop() {
          await consumer.stop();
          subscriptions.delete(subscription);
        },
      };
      subscriptions.add(subscription);
      return subscription;
    },
    waitForGroup: (topic, group, waitOptions) => waitForKafkaGroup(admin, topics, topic, group, waitOptions?.timeoutMs),
    async close() {
      closed = true;
      await Promise.all([...subscriptions].map((subscription) => subscription.stop()));
      await producer.disconnect();
      await admin.disconnect();
    },
  };
}

/**
 * One group member. Each fetch is handled in chunks (kafka-batch.ts); a failing
 * handler is retried in place with a backoff (heartbeating meanwhile) rather
 * than thrown to kafkajs: the offset is not resolved until it succeeds, so the
 * message is never skipped. If the member crashes in a way kafkajs will not
 * restart from, we start a new one.
 */
interface MemberOptions extends SubscribeOptions {
  /** The topic as callers name it (without the prefix): what delivered messages carry. */
  logicalTopic: string;
  sessionTimeoutMs: number;
}

async function startKafkaConsumer(kafka: KafkaClient, options: MemberOptions, parentLogger: Logger): Promise<Subscription> {
  const { topic, group, handle } = options;
  const logger = parentLogger.child({ topic, group });
  let stopping = false;
  const stopped = deferred();
  let current: Consumer | null = null;
  let restartTimer: NodeJS.Timeout | undefined;
  const restartBackoff = new Backoff(1_000, 30_000);

  const eachBatch = kafkaBatchHandler({
    topic: options.logicalTopic,
    handle,
    handleBatch: options.handleBatch,
    logger,
    stopping: () => stopping,
    stopped: stopped.promise,
  });

  function scheduleRestart(error: unknown): void {
    if (stopping) return;
    const waitMs = restartBackoff.next();
    logger.error({ err: error, restartInMs: waitMs }, "kafka consumer stopped; starting a new one");
    restartTimer = setTimeout(() => {
      start().catch(scheduleRestart);
    }, waitMs);
  }

  async function start(): Promise<void> {
    const consumer = kafka.consumer({
      groupId: group,
      sessionTimeout: options.sessionTimeoutMs,
      // Three heartbeats fit in a session, as Kafka recommends.
      heartbeatInterval: Math.min(3_000, Math.floor(options.sessionTimeoutMs / 3)),
      retry: { retries: 10, maxRetryTime: 5_000, restartOnFailure: async () => true },
      // A fetch waits at the broker for 64 kB or the relays' linger, whichever comes first,
      // as the Postgres log's consumer lingers once woken (timing.ts): one settlement
      // statement then carries many requests' events, not the one or two that arrived
      // since the last fetch answered.
      minBytes: FETCH_MIN_BYTES,
      maxWaitTimeInMs: DEFAULT_LINGER_MS,
    });
    current = consumer;
    // kafkajs restarts a member after retriable failures itself; after the others it gives up, we do not.
    consumer.on(consumer.events.CRASH, (event) => {
      if (!event.payload.restart) scheduleRestart(event.payload.error);
    });
    consumer.on(consumer.events.GROUP_JOIN, () => restartBackoff.reset());
    await consumer.connect();
    // A new group reads the topic from its start, as on the Postgres log.
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    // run() resolves once this member has joined the group and received its partitions.
    // Offsets are resolved by the handler as messages are handled, never for a whole fetch at once.
    await consumer.run({ eachBatch, eachBatchAutoResolve: false, partitionsConsumedConcurrently: 1 });
  }

  await start();
  return {
    async stop() {
      stopping = true;
      stopped.resolve();
      clearTimeout(restartTimer);
      // disconnect() lets the message in hand finish and commits resolved offsets first.
      await current?.disconnect();
    },
  };
}
