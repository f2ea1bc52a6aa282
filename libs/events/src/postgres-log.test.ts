import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Db } from "@orvado/db";
import { MAX_BATCH_MESSAGES } from "./batch-call.ts";
import { kafkaSettings } from "./kafka-settings.ts";
import { openEventStream } from "./open.ts";
import { bytes, openTestDatabase, silentLogger as logger, text, waitUntil, type TestDatabase } from "./test-support.ts";
import { deferred } from "./timing.ts";
import type { DeliveredMessage, EventStream } from "./types.ts";
import { waitForGroup } from "./wait-for-group.ts";

// Behaviour of the Postgres log beyond the shared contract (contract.test.ts).

const unique = (prefix: string) => `${prefix}.${randomBytes(6).toString("hex")}`;
const message = (id: string, key = "acct-1") => ({ id, key, value: bytes(id) });

describe("postgres log", () => {
  let database: TestDatabase;
  let db: Db;
  const streams: EventStream[] = [];
  async function open(on: Db = db, pollMs?: number): Promise<EventStream> {
    const stream = await openEventStream({ db: on, logger, pollMs });
    streams.push(stream);
    return stream;
  }

  beforeAll(async () => {
    database = await openTestDatabase();
    db = database.db;
  });
  afterAll(async () => {
    await Promise.all(streams.map((stream) => stream.close()));
    await database.close();
  });

  it("is chosen when no Kafka brokers are given, and creates its schema idempotently", async () => {
    const first = await openEventStream({ db, logger, kafka: kafkaSettings([]) });
    const second = await openEventStream({ db, logger, kafka: kafkaSettings([" "]) });
    expect([first.name, second.name]).toEqual(["postgres", "postgres"]);
    await Promise.all([first.close(), second.close()]);
  });

  it("wakes consumers at once on publish, in this process and (through NOTIFY) in another", async () => {
    const topic = unique("wake");
    const local: string[] = [];
    const remote: string[] = [];
    // Polling every minute: only a wake-up can deliver within the test's time.
    const here = await open(db, 60_000);
    const there = await open(await database.another(), 60_000);
    await here.subscribe({ topic, group: unique("here"), handle: async (m) => void local.push(m.id) });
    await there.subscribe({ topic, group: unique("there"), handle: async (m) => void remote.push(m.id) });
    const started = Date.now();
    await here.publish(topic, [message("w1")]);
    await waitUntil(() => local.length === 1 && remote.length === 1, "both consumers", 2_000);
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it("stops right after the message in hand and commits it", async () => {
    const stream = await open();
    const topic = unique("stop");
    const group = unique("g");
    await stream.publish(topic, ["m1", "m2", "m3", "m4", "m5", "m6"].map((id) => message(id)));
    const seen: string[] = [];
    const reached = deferred();
    const release = deferred();
    const subscription = await stream.subscribe({
      topic,
      group,
      async handle(m) {
        seen.push(m.id);
        if (m.id === "m3") {
          reached.resolve();
          await release.promise;
        }
      },
    });
    await reached.promise;
    const stopping = subscription.stop();
    release.resolve();
    await stopping;
    expect(seen).toEqual(["m1", "m2", "m3"]);
    const rest: string[] = [];
    await stream.subscribe({ topic, group, handle: async (m) => void rest.push(m.id) });
    await waitForGroup(db, topic, group);
    expect(rest).toEqual(["m4", "m5", "m6"]);
  });

  it("hands a subscriber that takes batches what it read in one call, and commits it", async () => {
    const stream = await open();
    const topic = unique("batch");
    const group = unique("g");
    const ids = Array.from({ length: MAX_BATCH_MESSAGES + 50 }, (_, i) => `m${i}`);
    await stream.publish(topic, ids.map((id) => message(id)));
    const batches: string[][] = [];
    const single: string[] = [];
    await stream.subscribe({
      topic,
      group,
      handle: async (m) => void single.push(m.id),
      handleBatch: async (messages) => void batches.push(messages.map((m) => m.id)),
    });
    await waitForGroup(db, topic, group);
    // A round reads at most MAX_BATCH_MESSAGES: all of those, then the 50 left, each in one call.
    expect(batches.map((batch) => batch.length)).toEqual([MAX_BATCH_MESSAGES, 50]);
    expect([...batches.flat(), ...single]).toEqual(ids);
  });

  it("backs off between retries of a failing message: 100 ms, then 200 ms, …", async () => {
    const stream = await open();
    const topic = unique("backoff");
    const attemptsAt: number[] = [];
    await stream.subscribe({
      topic,
      group: unique("g"),
      async handle() {
        attemptsAt.push(Date.now());
        if (attemptsAt.length <= 3) throw new Error("not yet");
      },
    });
    await stream.publish(topic, [message("b1")]);
    await waitUntil(() => attemptsAt.length === 4, "the fourth attempt");
    const gaps = attemptsAt.slice(1).map((at, i) => at - attemptsAt[i]!);
    expect(gaps[0]).toBeGreaterThanOrEqual(90);
    expect(gaps[1]).toBeGreaterThanOrEqual(190);
    expect(gaps[2]).toBeGreaterThanOrEqual(390);
  });

  it("lets a handler use the same Db, transactions included (no deadlock on PGlite)", async () => {
    const stream = await open();
    const topic = unique("handler-db");
    await db.exec("CREATE TABLE IF NOT EXISTS public.handled_events (id TEXT PRIMARY KEY)");
    await stream.subscribe({
      topic,
      group: unique("g"),
      handle: (m) => db.tx(async (q) => void (await q.query("INSERT INTO public.handled_events (id) VALUES ($1)", [`${topic}:${m.id}`]))),
    });
    await stream.publish(topic, [message("h1"), message("h2")]);
    await waitUntil(async () => {
      const result = await db.query("SELECT id FROM public.handled_events WHERE id LIKE $1", [`${topic}:%`]);
      return result.rows.length === 2;
    }, "both rows written by the handler");
  });

  it("loses nothing when many publishers race on one topic (offsets become visible in order)", async () => {
    const other = await database.another();
    const streamA = await open();
    const streamB = await open(other);
    const topic = unique("race");
    const group = unique("g");
    const got: DeliveredMessage[] = [];
    await streamA.subscribe({ topic, group, handle: async (m) => void got.push(m) });
    const publishes = Array.from({ length: 40 }, (_, i) =>
      (i % 2 ? streamA : streamB).publish(topic, [message(`r${i}a`, `k${i % 4}`), message(`r${i}b`, `k${i % 4}`)]),
    );
    await Promise.all(publishes);
    await waitForGroup(db, topic, group);
    expect(new Set(got.map((m) => m.id)).size).toBe(80);
    expect(got).toHaveLength(80);
  });

  it("waitForGroup resolves once the group has caught up, and rejects on timeout", async () => {
    const stream = await open();
    const topic = unique("wait");
    const group = unique("g");
    await waitForGroup(db, topic, group); // an empty topic is caught up
    await stream.publish(topic, [message("x1"), message("x2")]);
    await expect(waitForGroup(db, topic, group, { timeoutMs: 100 })).rejects.toThrow(/still at offset 0/);
    const got: string[] = [];
    await stream.subscribe({ topic, group, handle: async (m) => void got.push(text(m.value)) });
    await waitForGroup(db, topic, group);
    expect(got).toEqual(["x1", "x2"]);
  });

  it("keeps the log append-only", async () => {
    const stream = await open();
    const topic = unique("append-only");
    await stream.publish(topic, [message("a1")]);
    await expect(db.query("UPDATE stream.messages SET key = 'x' WHERE topic = $1", [topic])).rejects.toThrow(/append-only/);
    await expect(db.query("DELETE FROM stream.messages WHERE topic = $1", [topic])).rejects.toThrow(/append-only/);
  });

  it("close() stops its subscriptions and refuses new ones", async () => {
    const stream = await openEventStream({ db, logger });
    const topic = unique("close");
    const got: string[] = [];
    await stream.subscribe({ topic, group: unique("g"), handle: async (m) => void got.push(m.id) });
    await stream.close();
    const publisher = await open();
    await publisher.publish(topic, [message("late")]);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(got).toEqual([]);
    await expect(stream.subscribe({ topic, group: unique("g"), handle: async () => {} })).rejects.toThrow(/closed/);
  });
});
