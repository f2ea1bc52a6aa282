import type { Db } from "@orvado/db";

// The Postgres log lives in its own schema `stream`, owned by this lib.
// Offsets come from one identity column shared by all topics; a topic's
// offsets are increasing but not contiguous, and consumers only compare them.

export const STREAM_CHANNEL = "orvado_stream";

/** Namespace of this lib's advisory locks (first int4 of the two-key form). */
export const ADVISORY_NAMESPACE = 0x4f_52_56; // "ORV"

const DDL = `
CREATE SCHEMA IF NOT EXISTS stream;

CREATE TABLE IF NOT EXISTS stream.messages (
  "offset" BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  topic TEXT NOT NULL,
  key TEXT NOT NULL,
  id TEXT NOT NULL,
  value BYTEA NOT NULL,
  published_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS messages_topic_offset ON stream.messages (topic, "offset");

CREATE TABLE IF NOT EXISTS stream.consumer_offsets (
  "group" TEXT NOT NULL,
  topic TEXT NOT NULL,
  committed_offset BIGINT NOT NULL DEFAULT 0,
  committed_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  PRIMARY KEY ("group", topic)
);

-- The log is append-only: a consumer that has committed offset N must be able
-- to trust that nothing at or below N changes under it.
CREATE OR REPLACE FUNCTION stream.refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'stream.messages is append-only';
END
$$;

DO $$
BEGIN
  IF NOT EXISTS (
    SELECT 1 FROM pg_trigger WHERE tgname = 'messages_append_only' AND tgrelid = 'stream.messages'::regclass
  ) THEN
    CREATE TRIGGER messages_append_only BEFORE UPDATE OR DELETE OR TRUNCATE ON stream.messages
      FOR EACH STATEMENT EXECUTE FUNCTION stream.refuse_change();
  END IF;
END
$$;
`;

/** Creates the log's tables if missing; safe when several processes start at once. */
export async function ensureStreamSchema(db: Db): Promise<void> {
  await db.tx(async (q) => {
    await q.query("SELECT pg_advisory_xact_lock(hashtext('orvado.migrate.stream'))");
    await q.exec(DDL);
  });
}
