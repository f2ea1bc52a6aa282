import type { Logger } from "@orvado/core";
import type { DeliveredMessage, SubscribeOptions } from "./types.ts";

/**
 * The most messages one handleBatch call gets, on every adapter. Billing settles a
 * batch in one statement and one commit, so under load larger batches carry more
 * captures per commit: more reserve+capture pairs a second than batches of 100,
 * and captures lag their requests less (docs/design-choices.md#outbox-and-consumers-in-batches).
 */
export const MAX_BATCH_MESSAGES = 500;

/**
 * The subscriber's batch handler's part of a batch, as every adapter applies it
 * (SubscribeOptions.handleBatch): several messages in one call when the subscriber
 * takes batches; false when it does not, the batch is a lone message, the
 * subscription is stopping, or the call threw. On false the adapter hands the
 * same messages to `handle` one at a time.
 */
export async function handledAsOneBatch<T>(
  subscriber: Pick<SubscribeOptions, "handleBatch">,
  messages: readonly T[],
  delivered: (message: T) => DeliveredMessage,
  stopping: boolean,
  logger: Logger,
): Promise<boolean> {
  if (!subscriber.handleBatch || messages.length < 2 || stopping) return false;
  try {
    await subscriber.handleBatch(messages.map(delivered));
    return true;
  } catch (error) {
    logger.warn({ err: error, messages: messages.length }, "batch handler failed; handling its messages one at a time");
    return false;
  }
}
