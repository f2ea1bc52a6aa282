import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Db } from "@orvado/db";
import { openEventStream } from "./open.ts";
import { enqueueOutbox, migrateOutbox } from "./outbox.ts";
import { startOutboxRelay, type OutboxRelay } from "./outbox-relay.ts";
import { bytes, openTestDatabase, silentLogger as logger, text, waitUntil, type TestDatabase } from "./test-support.ts";
import type { EventStream } from "./types.ts";

const unique = (prefix: string) => `${prefix}.${randomBytes(6).toString("hex")}`;
const message = (id: string) => ({ id, key: "acct-1", value: bytes(`value of ${id}`) });

/** Ids published to `topic` on the Postgres log, in offset order. */
async function publishedIds(db: Db, topic: string): Promise<string[]> {
  const result = await db.query<{ id: string }>(`SELECT id FROM stream.messages WHERE topic = $1 ORDER BY "offset"`, [topic]);
  return result.rows.map((row) => row.id);
}

describe("transactional outbox", () => {
  let database: TestDatabase;
  let db: Db;
  let stream: EventStream;
  const relays: OutboxRelay[] = [];
  const streams: EventStream[] = [];
  let schemaCount = 0;

  /** Each test gets its own outbox schema, so relays of different tests never meet. */
  async function freshOutbox(): Promise<string> {
    const schema = `outbox_t${++schemaCount}`;
    await migrateOutbox(db, schema);
    return schema;
  }
  function relay(options: { schema: string; on?: Db; via?: EventStream; pollMs?: number }): OutboxRelay {
    const started = startOutboxRelay({ db: options.on ?? db, schema: options.schema, stream: options.via ?? stream, logger, pollMs: options.pollMs });
    relays.push(started);
    return started;
  }

  beforeAll(async () => {
    database = await openTestDatabase();
    db = database.db;
    stream = await openEventStream({ db, logger });
    streams.push(stream);
  });
  afterAll(async () => {
    await Promise.all(relays.map((started) => started.stop()));
    await Promise.all(streams.map((opened) => opened.close()));
    await database.close();
  });

  it("migrates idempotently and refuses schema names that are not plain identifiers", async () => {
    const schema = await freshOutbox();
    await migrateOutbox(db, schema);
    await expect(migrateOutbox(db, "x; DROP TABLE y")).rejects.toThrow(/bad schema name/);
    await expect(enqueueOutbox(db, "Bad-Name", "t", message("m"))).rejects.toThrow(/bad schema name/);
  });

  it("publishes committed rows once, in order, and never those of a rolled-back transaction", async () => {
    const schema = await freshOutbox();
    const topic = unique("outbox.order");
    await db.tx(async (q) => {
      await enqueueOutbox(q, schema, topic, message("c1"));
      await enqueueOutbox(q, schema, topic, message("c2"));
    });
    await expect(
      db.tx(async (q) => {
        await enqueueOutbox(q, schema, topic, message("rolled-back"));
        throw new Error("the state change failed");
      }),
    ).rejects.toThrow(/state change failed/);
    await db.tx((q) => enqueueOutbox(q, schema, topic, message("c3")));
    const started = relay({ schema });
    started.poke();
    await started.flush();
    await started.flush(); // nothing new: no republish
    expect(await publishedIds(db, topic)).toEqual(["c1", "c2", "c3"]);
    const values = await db.query<{ value: Uint8Array }>(`SELECT value FROM stream.messages WHERE topic = $1 ORDER BY "offset"`, [topic]);
    expect(values.rows.map((row) => text(row.value))).toEqual(["value of c1", "value of c2", "value of c3"]);
    // Published rows leave the outbox: the stream holds them now.
    const left = await db.query(`SELECT 1 FROM ${schema}.outbox`);
    expect(left.rows).toEqual([]);
  });

  it("flush() waits until every row committed before it is published", async () => {
    const schema = await freshOutbox();
    const topic = unique("outbox.flush");
    // Polling once a minute: only flush() can get these out within the test.
    const started = relay({ schema, pollMs: 60_000 });
    await new Promise((resolve) => setTimeout(resolve, 50)); // let its first, empty round pass
    const ids = Array.from({ length: 450 }, (_, i) => `f${i}`);
    await db.tx(async (q) => {
      for (const id of ids) await enqueueOutbox(q, schema, topic, message(id));
    });
    await started.flush();
    expect(await publishedIds(db, topic)).toEqual(ids);
  });

  it("poke() publishes within milliseconds, not a poll interval", async () => {
    const schema = await freshOutbox();
    const topic = unique("outbox.poke");
    const started = relay({ schema, pollMs: 60_000 });
    await new Promise((resolve) => setTimeout(resolve, 50));
    await db.tx((q) => enqueueOutbox(q, schema, topic, message("p1")));
    started.poke();
    await waitUntil(async () => (await publishedIds(db, topic)).length === 1, "the poked row", 2_000);
  });

  it("retries a failed publish until it goes through, leaving the rows unsent meanwhile", async () => {
    const schema = await freshOutbox();
    const topic = unique("outbox.retry");
    let failures = 0;
    const flaky: EventStream = {
      name: stream.name,
      async publish(publishTopic, messages) {
        if (failures < 2) {
          failures += 1;
          throw new Error("broker unavailable");
        }
        await stream.publish(publishTopic, messages);
      },
      subscribe: (options) => stream.subscribe(options),
      waitForGroup: (waitTopic, group, options) => stream.waitForGroup(waitTopic, group, options),
      close: async () => {},
    };
    await db.tx(async (q) => {
      await enqueueOutbox(q, schema, topic, message("r1"));
      await enqueueOutbox(q, schema, topic, message("r2"));
    });
    const started = relay({ schema, via: flaky });
    await started.flush({ timeoutMs: 5_000 });
    expect(failures).toBe(2);
    expect(await publishedIds(db, topic)).toEqual(["r1", "r2"]);
  });

  it("two relays on one outbox publish each row exactly once, in order", async () => {
    const schema = await freshOutbox();
    const topic = unique("outbox.replicas");
    const otherDb = await database.another();
    const otherStream = otherDb === db ? stream : await openEventStream({ db: otherDb, logger });
    if (otherStream !== stream) streams.push(otherStream);
    const first = relay({ schema, pollMs: 20 });
    const second = relay({ schema, on: otherDb, via: otherStream, pollMs: 20 });
    const ids: string[] = [];
    for (let t = 0; t < 30; t++) {
      const batch = Array.from({ length: 10 }, (_, i) => `x${t * 10 + i}`);
      ids.push(...batch);
      await db.tx(async (q) => {
        for (const id of batch) await enqueueOutbox(q, schema, topic, message(id));
      });
      (t % 2 ? first : second).poke();
    }
    await Promise.all([first.flush(), second.flush()]);
    expect(await publishedIds(db, topic)).toEqual(ids);
  });

  it("stop() ends the relay; a flush that cannot complete then rejects", async () => {
    const schema = await freshOutbox();
    const topic = unique("outbox.stop");
    const started = relay({ schema, pollMs: 60_000 });
    await started.stop();
    await db.tx((q) => enqueueOutbox(q, schema, topic, message("s1")));
    await expect(started.flush()).rejects.toThrow(/stopped/);
    expect(await publishedIds(db, topic)).toEqual([]);
  });
});
