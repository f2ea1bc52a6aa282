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

-- One publish in one round trip: publishers of a topic take turns until commit
-- (the advisory lock), so offsets become visible in increasing order and a
-- consumer that has read offset N never later finds a smaller one committed
-- behind it. Rows are numbered in the arrays' order. The commit need not wait
-- for the disk: every event published here is still in its producer's outbox,
-- deleted from there only by a later commit, and a crash loses a suffix of the WAL,
-- never a hole. The notification names the topic and the publisher (origin),
-- so a publisher's own consumers, already woken in-process, can skip it.
CREATE OR REPLACE FUNCTION stream.append(p_topic text, p_keys text[], p_ids text[], p_values bytea[], p_origin text)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM set_config('synchronous_commit', 'off', true);
  PERFORM pg_advisory_xact_lock(${ADVISORY_NAMESPACE}, hashtext(p_topic));
  INSERT INTO stream.messages (topic, key, id, value)
  SELECT p_topic, m.key, m.id, m.value
    FROM unnest(p_keys, p_ids, p_values) WITH ORDINALITY AS m (key, id, value, position)
   ORDER BY m.position;
  PERFORM pg_notify('${STREAM_CHANNEL}', p_topic || chr(10) || p_origin);
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
