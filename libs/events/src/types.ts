// The event-stream port: what producers and consumers see, whichever adapter
// (the Postgres log embedded by default, Kafka in production) carries the bytes.

export const BILLING_TOPIC = "orvado.billing.v1";

export interface OutgoingMessage {
  /** Unique event id; a redelivery carries the same id, so consumers can deduplicate. */
  id: string;
  /** Partition key (the account id): messages with one key are handled in publish order. */
  key: string;
  value: Uint8Array;
}

export interface DeliveredMessage {
  topic: string;
  id: string;
  key: string;
  value: Uint8Array;
}

export interface Subscription {
  /** Lets the message in hand finish, commits what was handled, then stops. */
  stop(): Promise<void>;
}

export interface SubscribeOptions {
  topic: string;
  group: string;
  /**
   * Awaited before the message counts as consumed. A throw means "not handled":
   * the message comes again after a backoff, and nothing behind it with the
   * same key is handled first. Delivery is at least once, so handlers must be
   * idempotent on the message id.
   */
  handle(message: DeliveredMessage): Promise<void>;
  /**
   * Optional: several messages in one call (in delivery order, e.g. to settle them
   * in one database statement), all handled when it resolves. A throw means none
   * of them counts as handled: the adapter then gives the same messages to
   * `handle` one at a time, so a bad message holds back only itself and what
   * follows it. Both adapters hand over at most MAX_BATCH_MESSAGES (batch-call.ts)
   * of one partition (Kafka) or of the topic (Postgres log) per call; an adapter may also always
   * use `handle`, so handlers must give the same result either way.
   */
  handleBatch?(messages: DeliveredMessage[]): Promise<void>;
}

export interface EventStream {
  readonly name: "postgres" | "kafka";
  publish(topic: string, messages: OutgoingMessage[]): Promise<void>;
  subscribe(options: SubscribeOptions): Promise<Subscription>;
  /**
   * Resolves once `group` has committed everything that was in `topic` when
   * called (graceful shutdown, tests, benchmarks); rejects after timeoutMs.
   */
  waitForGroup(topic: string, group: string, options?: { timeoutMs?: number }): Promise<void>;
  /** Stops every subscription of this stream and releases its connections (not the Db). */
  close(): Promise<void>;
}

/** A plain Uint8Array view of what a driver hands back (node Buffer, PGlite bytes). */
export function asBytes(value: Uint8Array): Uint8Array {
  return new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
}
