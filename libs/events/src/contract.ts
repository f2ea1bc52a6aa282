import { randomBytes } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import { deferred } from "./timing.ts";
import type { DeliveredMessage, EventStream, OutgoingMessage } from "./types.ts";

// The one contract every EventStream adapter must pass (the Postgres log, Kafka).
// Each test uses its own topic and groups, so adapters need no cleanup between tests.

export interface ContractOptions {
  /** How long deliveries may take before a test fails (a Kafka group join is slow). */
  deliveryTimeoutMs?: number;
  /** Once everything expected has arrived, how long to keep listening for a duplicate. */
  settleMs?: number;
}

/**
 * makeStream opens a stream on the adapter's backend; each call is a separate
 * client of the same backend (a second process, as far as the adapter can tell),
 * and the suite closes every stream it opened after each test.
 */
export function describeEventStreamContract(name: string, makeStream: () => Promise<EventStream>, options: ContractOptions = {}): void {
  const deliveryTimeoutMs = options.deliveryTimeoutMs ?? 10_000;
  const settleMs = options.settleMs ?? 200;

  describe(`event stream contract: ${name}`, () => {
    const opened: EventStream[] = [];
    async function open(): Promise<EventStream> {
      const stream = await makeStream();
      opened.push(stream);
      return stream;
    }
    afterEach(async () => {
      await Promise.all(opened.splice(0).map((stream) => stream.close()));
    });

    const eventually = (check: () => boolean, what: string) => waitUntil(check, what, deliveryTimeoutMs);
    const settle = () => new Promise((resolve) => setTimeout(resolve, settleMs));

    it("delivers every message once, intact, in publish order per key", async () => {
      const stream = await open();
      const topic = unique("contract.order");
      const all = makeMessages("o", 30, 3);
      // Half is published before anyone subscribes: a new group reads from the start of the topic.
      await stream.publish(topic, all.slice(0, 15));
      const got: DeliveredMessage[] = [];
      await stream.subscribe({ topic, group: unique("g"), handle: async (message) => void got.push(message) });
      await stream.publish(topic, all.slice(15, 20));
      await stream.publish(topic, []);
      await stream.publish(topic, all.slice(20));
      await eventually(() => got.length >= all.length, `all ${all.length} messages`);
      await settle();

      expectEachOnce(got, all);
      const sent = new Map(all.map((message) => [message.id, message]));
      for (const message of got) {
        const original = sent.get(message.id)!;
        expect(message.topic).toBe(topic);
        expect(message.key).toBe(original.key);
        expect(message.value).toBeInstanceOf(Uint8Array);
        expect(Array.from(message.value)).toEqual(Array.from(original.value));
      }
      expect(idsByKey(got)).toEqual(idsByKey(all));
    });

    it("gives every group the whole topic", async () => {
      const stream = await open();
      const topic = unique("contract.groups");
      const all = makeMessages("g", 20, 2);
      const first: DeliveredMessage[] = [];
      const second: DeliveredMessage[] = [];
      await stream.subscribe({ topic, group: unique("g1"), handle: async (message) => void first.push(message) });
      await stream.subscribe({ topic, group: unique("g2"), handle: async (message) => void second.push(message) });
      await stream.publish(topic, all);
      await eventually(() => first.length >= all.length && second.length >= all.length, "both groups to have everything");
      await settle();
      expectEachOnce(first, all);
      expectEachOnce(second, all);
      expect(idsByKey(first)).toEqual(idsByKey(all));
      expect(idsByKey(second)).toEqual(idsByKey(all));
    });

    it("redelivers a message whose handler threw, losing and reordering nothing behind it", async () => {
      const stream = await open();
      const topic = unique("contract.retry");
      const all = makeMessages("r", 12, 2);
      const poison = all[4]!.id;
      const attempts = new Map<string, number>();
      const handled: DeliveredMessage[] = [];
      await stream.subscribe({
        topic,
        group: unique("g"),
        async handle(message) {
          const seen = (attempts.get(message.id) ?? 0) + 1;
          attempts.set(message.id, seen);
          if (message.id === poison && seen === 1) throw new Error("refused on first sight");
          handled.push(message);
        },
      });
      await stream.publish(topic, all);
      await eventually(() => handled.length >= all.length, `all ${all.length} messages handled`);
      await settle();
      expect(attempts.get(poison)).toBeGreaterThanOrEqual(2);
      expectEachOnce(handled, all);
      expect(idsByKey(handled)).toEqual(idsByKey(all));
    });

    it("with a batch handler, handles every message once in order, one at a time after a batch throws", async () => {
      const stream = await open();
      const topic = unique("contract.batch");
      const all = makeMessages("b", 40, 3);
      const poison = all[17]!.id;
      const handled: DeliveredMessage[] = [];
      let poisonSeen = 0;
      // Adapters may hand over batches or not; either way the result is the same.
      await stream.subscribe({
        topic,
        group: unique("g"),
        async handle(message) {
          if (message.id === poison && ++poisonSeen === 1) throw new Error("refused on first sight");
          handled.push(message);
        },
        async handleBatch(messages) {
          if (messages.some((message) => message.id === poison)) throw new Error("a batch with the poison fails whole");
          handled.push(...messages);
        },
      });
      await stream.publish(topic, all);
      await eventually(() => handled.length >= all.length, `all ${all.length} messages handled`);
      await settle();
      expect(poisonSeen).toBeGreaterThanOrEqual(2);
      expectEachOnce(handled, all);
      expect(idsByKey(handled)).toEqual(idsByKey(all));
    });

    it("resumes a group after the committed offset when it subscribes again", async () => {
      const stream = await open();
      const topic = unique("contract.restart");
      const group = unique("g");
      const before = makeMessages("b", 10, 2);
      const after = makeMessages("a", 10, 2);
      await stream.publish(topic, before);

      const firstRun: DeliveredMessage[] = [];
      const reached = deferred();
      const release = deferred();
      const first = await stream.subscribe({
        topic,
        group,
        async handle(message) {
          firstRun.push(message);
          if (firstRun.length === 4) {
            // Hold the fourth message until stop() has been asked for: the stop lands halfway.
            reached.resolve();
            await release.promise;
          }
        },
      });
      await reached.promise;
      const stopping = first.stop();
      release.resolve();
      await stopping;
      expect(firstRun.length).toBeGreaterThanOrEqual(4);

      await stream.publish(topic, after);
      const secondRun: DeliveredMessage[] = [];
      await stream.subscribe({ topic, group, handle: async (message) => void secondRun.push(message) });
      const all = [...before, ...after];
      await eventually(() => firstRun.length + secondRun.length >= all.length, "the rest of the topic");
      await settle();

      const firstIds = new Set(firstRun.map((message) => message.id));
      expectEachOnce(firstRun, before.filter((message) => firstIds.has(message.id)));
      expectEachOnce(secondRun, all.filter((message) => !firstIds.has(message.id)));
      expect(idsByKey([...firstRun, ...secondRun])).toEqual(idsByKey(all));
    });

    it("shares a group between subscribers: each message handled once in total, never twice at once", async () => {
      const streamA = await open();
      const streamB = await open();
      const topic = unique("contract.shared");
      const group = unique("g");
      const all = makeMessages("s", 60, 6);
      const handled: DeliveredMessage[] = [];
      const inFlight = new Set<string>();
      const overlaps: string[] = [];
      const handle = async (message: DeliveredMessage) => {
        if (inFlight.has(message.id)) overlaps.push(message.id);
        inFlight.add(message.id);
        await new Promise((resolve) => setTimeout(resolve, 1));
        inFlight.delete(message.id);
        handled.push(message);
      };
      await streamA.subscribe({ topic, group, handle });
      await streamA.subscribe({ topic, group, handle });
      await streamB.subscribe({ topic, group, handle });
      for (let start = 0; start < all.length; start += 20) await streamA.publish(topic, all.slice(start, start + 20));
      await eventually(() => handled.length >= all.length, `all ${all.length} messages handled`);
      await settle();
      expect(overlaps).toEqual([]);
      expectEachOnce(handled, all);
      expect(idsByKey(handled)).toEqual(idsByKey(all));
    });
  });
}

function unique(prefix: string): string {
  return `${prefix}.${randomBytes(6).toString("hex")}`;
}

/** Messages spread over `keys` keys; values hold binary bytes (0x00, 0xff) to prove they pass intact. */
function makeMessages(tag: string, count: number, keys: number): OutgoingMessage[] {
  const run = randomBytes(4).toString("hex");
  return Array.from({ length: count }, (_, i) => {
    const id = `${tag}-${run}-${i}`;
    return { id, key: `acct-${run}-${i % keys}`, value: new Uint8Array([0, 255, i % 256, ...Buffer.from(id)]) };
  });
}

function idsByKey(messages: { id: string; key: string }[]): Record<string, string[]> {
  const byKey: Record<string, string[]> = {};
  for (const message of messages) (byKey[message.key] ??= []).push(message.id);
  return byKey;
}

function expectEachOnce(got: { id: string }[], expected: { id: string }[]): void {
  expect(got.map((message) => message.id).sort()).toEqual(expected.map((message) => message.id).sort());
}

async function waitUntil(check: () => boolean, what: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
