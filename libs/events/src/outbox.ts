import type { Db, Queryable } from "@orvado/db";
import type { OutgoingMessage } from "./types.ts";

// The transactional outbox: a producer writes its events into its own schema's
// outbox in the same transaction as the state change that caused them, so the
// two commit or roll back together. A relay (outbox-relay.ts) publishes them.

const SCHEMA_NAME = /^[a-z_][a-z0-9_]*$/;

/** The qualified outbox table of a service schema; the name is checked since it is spliced into SQL. */
export function outboxTable(schema: string): string {
  if (!SCHEMA_NAME.test(schema)) throw new Error(`bad schema name ${schema}`);
  return `${schema}.outbox`;
}

/** Creates <schema>.outbox if missing; idempotent and safe for replicas starting together. */
export async function migrateOutbox(db: Db, schema: string): Promise<void> {
  const table = outboxTable(schema);
  await db.tx(async (q) => {
    // The same lock as @orvado/db's migrate(), so this never races the service's own migrations.
    await q.query("SELECT pg_advisory_xact_lock(hashtext($1))", [`orvado.migrate.${schema}`]);
    await q.exec(`
      CREATE SCHEMA IF NOT EXISTS ${schema};
      CREATE TABLE IF NOT EXISTS ${table} (
        seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        topic TEXT NOT NULL,
        key TEXT NOT NULL,
        event_id TEXT NOT NULL,
        value BYTEA NOT NULL,
        created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        -- Set by relays before rows were deleted once published; older relays may still set it during an upgrade.
        sent_at TIMESTAMPTZ
      );
      -- Sent rows are deleted now (outbox-relay.ts): every row is unsent, so the primary key serves
      -- the relay's scan, and rows an earlier version marked sent are removed once.
      DROP INDEX IF EXISTS ${schema}.outbox_unsent;
      DELETE FROM ${table} WHERE sent_at IS NOT NULL;
    `);
  });
}

export interface OutboxInsert {
  sql: string;
  params: unknown[];
}

/** An outbox's rows as column arrays, in the order given: topic, key, event id, value. */
export function outboxColumns(events: { topic: string; message: OutgoingMessage }[]): [string[], string[], string[], Buffer[]] {
  return [
    events.map((event) => event.topic),
    events.map((event) => event.message.key),
    events.map((event) => event.message.id),
    events.map(({ message }) => Buffer.from(message.value.buffer, message.value.byteOffset, message.value.byteLength)),
  ];
}

/**
 * The INSERT of events into `schema`'s outbox, in the order given, numbering its
 * parameters from firstParam, so a caller can make it the last step of a single
 * statement (`WITH <its changes> <sql>`) and commit state and events in one round trip.
 */
export function outboxInsert(schema: string, events: { topic: string; message: OutgoingMessage }[], firstParam = 1): OutboxInsert {
  const [a, b, c, d] = [0, 1, 2, 3].map((index) => `$${firstParam + index}`);
  return {
    sql: `INSERT INTO ${outboxTable(schema)} (topic, key, event_id, value)
          SELECT topic, key, event_id, value FROM unnest(${a}::text[], ${b}::text[], ${c}::text[], ${d}::bytea[])
                 WITH ORDINALITY AS event (topic, key, event_id, value, position) ORDER BY position`,
    params: outboxColumns(events),
  };
}

/** Adds one event to the outbox, inside the caller's transaction `q`. */
export async function enqueueOutbox(q: Queryable, schema: string, topic: string, message: OutgoingMessage): Promise<void> {
  const insert = outboxInsert(schema, [{ topic, message }]);
  await q.query(insert.sql, insert.params);
}
