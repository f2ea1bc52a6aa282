import { describe, expect, it } from "vitest";
import type { EachBatchPayload, KafkaMessage } from "kafkajs";
import { createLogger } from "@orvado/core";
import { MAX_BATCH_MESSAGES } from "./batch-call.ts";
import { kafkaBatchHandler, type KafkaBatchHandlerOptions } from "./kafka-batch.ts";
import { deferred } from "./timing.ts";
import type { DeliveredMessage } from "./types.ts";

// The Kafka adapter's handling of one fetched batch. The adapter as a whole is
// tested by the event-stream contract suite against a real broker (KAFKA_BROKERS;
// CI starts one); this pins down, without one, what the handler does with
// kafkajs's eachBatch payload, including the cases a broker rarely produces on
// cue (a stale batch, a stop mid-chunk): which messages reach which handler,
// and which offsets it resolves (kafkajs commits only those).

const logger = createLogger("kafka-batch-test", "silent");
const decoder = new TextDecoder();

function kafkaMessage(offset: number): KafkaMessage {
  return {
    offset: String(offset),
    key: Buffer.from(`account-${offset % 3}`),
    value: Buffer.from(`value-${offset}`),
    headers: { "event-id": Buffer.from(`event-${offset}`) },
    timestamp: "0",
    attributes: 0,
  } as KafkaMessage;
}

/** A partition's batch as kafkajs hands it over, recording what the handler does with it. */
function fakePayload(offsets: number[], state: { running?: () => boolean; stale?: () => boolean } = {}) {
  const resolved: string[] = [];
  let heartbeats = 0;
  const payload = {
    batch: { topic: "t", partition: 0, messages: offsets.map(kafkaMessage) },
    resolveOffset: (offset: string) => void resolved.push(offset),
    heartbeat: async () => void (heartbeats += 1),
    isRunning: state.running ?? (() => true),
    isStale: state.stale ?? (() => false),
  } as unknown as Pick<EachBatchPayload, "batch" | "resolveOffset" | "heartbeat" | "isRunning" | "isStale">;
  return { payload, resolved, heartbeats: () => heartbeats };
}

const range = (from: number, count: number) => Array.from({ length: count }, (_, index) => from + index);
const ids = (messages: DeliveredMessage[]) => messages.map((message) => message.id);

function handlerWith(overrides: Partial<KafkaBatchHandlerOptions>) {
  const stop = deferred();
  return kafkaBatchHandler({ topic: "t", handle: async () => {}, logger, stopping: () => false, stopped: stop.promise, ...overrides });
}

describe("kafkaBatchHandler", () => {
  it("hands a batch to handleBatch in chunks, resolving each chunk's last offset once it is handled", async () => {
    const calls: string[][] = [];
    const single: string[] = [];
    const handler = handlerWith({
      handle: async (message) => void single.push(message.id),
      handleBatch: async (messages) => void calls.push(ids(messages)),
    });
    const { payload, resolved, heartbeats } = fakePayload(range(10, MAX_BATCH_MESSAGES * 2 + 5));
    await handler(payload);
    expect(calls.map((call) => call.length)).toEqual([MAX_BATCH_MESSAGES, MAX_BATCH_MESSAGES, 5]);
    expect(calls.flat()).toEqual(range(10, MAX_BATCH_MESSAGES * 2 + 5).map((offset) => `event-${offset}`));
    expect(single).toEqual([]);
    expect(resolved).toEqual([String(10 + MAX_BATCH_MESSAGES - 1), String(10 + 2 * MAX_BATCH_MESSAGES - 1), String(10 + 2 * MAX_BATCH_MESSAGES + 4)]);
    expect(heartbeats()).toBe(3);
  });

  it("delivers each message's event id, key and value as published", async () => {
    const seen: DeliveredMessage[] = [];
    const handler = handlerWith({ handleBatch: async (messages) => void seen.push(...messages) });
    await handler(fakePayload([7, 8]).payload);
    expect(seen.map((message) => [message.topic, message.id, message.key, decoder.decode(message.value)])).toEqual([
      ["t", "event-7", "account-1", "value-7"],
      ["t", "event-8", "account-2", "value-8"],
    ]);
  });

  it("gives a lone message to handle, and every message to handle when there is no batch handler", async () => {
    const batches: string[][] = [];
    const single: string[] = [];
    const withBatches = handlerWith({ handle: async (m) => void single.push(m.id), handleBatch: async (m) => void batches.push(ids(m)) });
    const lone = fakePayload([3]);
    await withBatches(lone.payload);
    expect([batches, single, lone.resolved]).toEqual([[], ["event-3"], ["3"]]);

    const handled: string[] = [];
    const withoutBatches = handlerWith({ handle: async (m) => void handled.push(m.id) });
    const three = fakePayload([4, 5, 6]);
    await withoutBatches(three.payload);
    expect([handled, three.resolved]).toEqual([["event-4", "event-5", "event-6"], ["4", "5", "6"]]);
  });

  it("after a batch throws, handles its messages one at a time in order, retrying a failing one before anything behind it", async () => {
    const order: string[] = [];
    let failuresLeft = 2;
    const handler = handlerWith({
      handleBatch: async () => {
        throw new Error("one bad event in the batch");
      },
      handle: async (message) => {
        if (message.id === "event-2" && failuresLeft > 0) {
          failuresLeft -= 1;
          order.push("fail event-2");
          throw new Error("not yet");
        }
        order.push(message.id);
      },
    });
    const { payload, resolved, heartbeats } = fakePayload([1, 2, 3]);
    await handler(payload);
    expect(order).toEqual(["event-1", "fail event-2", "fail event-2", "event-2", "event-3"]);
    expect(resolved).toEqual(["1", "2", "3"]);
    // One heartbeat after each failed attempt's wait, one after the chunk.
    expect(heartbeats()).toBe(3);
  });

  it("stops while a message keeps failing, leaving it and everything behind it unresolved for redelivery", async () => {
    let stopping = false;
    const stop = deferred();
    const handled: string[] = [];
    const handler = kafkaBatchHandler({
      topic: "t",
      logger,
      stopping: () => stopping,
      stopped: stop.promise,
      handle: async (message) => {
        if (message.id === "event-2") {
          // The subscription is stopped while this message is failing.
          stopping = true;
          stop.resolve();
          throw new Error("still failing");
        }
        handled.push(message.id);
      },
    });
    const { payload, resolved } = fakePayload([1, 2, 3]);
    await handler(payload);
    expect(handled).toEqual(["event-1"]);
    expect(resolved).toEqual(["1"]);
  });

  it("handles nothing more of a batch whose partition went stale in a rebalance, or once the consumer stopped running", async () => {
    const calls: string[][] = [];
    let stale = false;
    const handler = handlerWith({
      handleBatch: async (messages) => {
        calls.push(ids(messages));
        stale = true;
      },
    });
    const staleRun = fakePayload(range(0, MAX_BATCH_MESSAGES + 1), { stale: () => stale });
    await handler(staleRun.payload);
    expect(calls.length).toBe(1);
    expect(staleRun.resolved).toEqual([String(MAX_BATCH_MESSAGES - 1)]);

    const stoppedRun = fakePayload([1, 2], { running: () => false });
    await handler(stoppedRun.payload);
    expect([calls.length, stoppedRun.resolved]).toEqual([1, []]);
  });
});
