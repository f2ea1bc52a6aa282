import type { Logger } from "@orvado/core";
import type { EachBatchPayload, IHeaders, KafkaMessage } from "kafkajs";
import { handledAsOneBatch, MAX_BATCH_MESSAGES } from "./batch-call.ts";
import { Backoff, delay } from "./timing.ts";
import { asBytes, type DeliveredMessage, type SubscribeOptions } from "./types.ts";

export const EVENT_ID_HEADER = "event-id";

export interface KafkaBatchHandlerOptions {
  topic: string;
  handle: SubscribeOptions["handle"];
  handleBatch?: SubscribeOptions["handleBatch"];
  logger: Logger;
  /** True once the subscription is stopping: nothing more is handled, nothing unhandled is resolved. */
  stopping(): boolean;
  /** Resolves when the subscription starts stopping (ends a retry's wait). */
  stopped: Promise<unknown>;
}

type BatchPayload = Pick<EachBatchPayload, "batch" | "resolveOffset" | "heartbeat" | "isRunning" | "isStale">;

/**
 * kafkajs's eachBatch for one subscription (run with eachBatchAutoResolve off).
 * Each chunk of a partition's batch goes to handleBatch in one call; if that
 * throws, its messages go to handle one at a time, each retried in place until
 * it succeeds, so a bad message holds back only itself and what follows it.
 * An offset is resolved only after its message was handled; kafkajs commits
 * resolved offsets only, so whatever is left unresolved is delivered again.
 */
export function kafkaBatchHandler(options: KafkaBatchHandlerOptions): (payload: BatchPayload) => Promise<void> {
  const { topic, logger } = options;

  /** Until it succeeds, or the subscription stops (false: left for redelivery). */
  async function handleOne(message: KafkaMessage, heartbeat: () => Promise<void>): Promise<boolean> {
    const delivered = deliveredMessage(topic, message);
    const backoff = new Backoff();
    for (let attempt = 1; ; attempt += 1) {
      if (options.stopping()) return false;
      try {
        await options.handle(delivered);
        return true;
      } catch (error) {
        const waitMs = backoff.next();
        logger.warn(
          { err: error, eventId: delivered.id, offset: message.offset, attempt, retryInMs: waitMs },
          "event handler failed; the message will be redelivered",
        );
        await delay(waitMs, options.stopped);
        await heartbeat();
      }
    }
  }

  return async ({ batch, resolveOffset, heartbeat, isRunning, isStale }) => {
    // A fetch can hold thousands of messages: each chunk's offsets are resolved, and a
    // heartbeat sent, as soon as that chunk is handled.
    for (let start = 0; start < batch.messages.length; start += MAX_BATCH_MESSAGES) {
      // Stale: the partition went to another member in a rebalance; it reads from the committed offset.
      if (!isRunning() || isStale() || options.stopping()) return;
      const chunk = batch.messages.slice(start, start + MAX_BATCH_MESSAGES);
      if (await handledAsOneBatch(options, chunk, (message) => deliveredMessage(topic, message), options.stopping(), logger)) {
        resolveOffset(chunk[chunk.length - 1]!.offset);
      } else {
        for (const message of chunk) {
          if (!(await handleOne(message, heartbeat))) return;
          resolveOffset(message.offset);
        }
      }
      await heartbeat();
    }
  };
}

function deliveredMessage(topic: string, message: KafkaMessage): DeliveredMessage {
  return {
    topic,
    id: headerText(message.headers, EVENT_ID_HEADER) ?? "",
    key: message.key?.toString("utf8") ?? "",
    value: asBytes(message.value ?? Buffer.alloc(0)),
  };
}

function headerText(headers: IHeaders | undefined, name: string): string | undefined {
  const value = headers?.[name];
  const first = Array.isArray(value) ? value[0] : value;
  return first === undefined ? undefined : first.toString();
}
