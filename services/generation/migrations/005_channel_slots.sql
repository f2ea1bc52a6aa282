-- A channel's capacity and circuit breaker, shared by every generation replica
-- (docs/providers.md, "Capacity and the circuit breaker"). The sandbox renders
-- inside each process and is counted there, so it has no rows here.

-- One row per upstream channel ('<model>/<channel>'): its breaker, and the row
-- take_channel_slot locks so that counting a channel's slots and taking one
-- are one step, whichever replica asks.
CREATE TABLE generation.channel_state (
  channel_key TEXT PRIMARY KEY,
  consecutive_failures INT NOT NULL DEFAULT 0,
  -- Set when the failures reach the threshold; the breaker is open until then.
  opened_until TIMESTAMPTZ,
  -- The half-open trial's slot while it runs: one trial at a time across replicas.
  trial_slot TEXT
);

-- One row per job running on a channel, on any replica: a lease. The process
-- holding it renews expires_at while the job runs and deletes the row when the
-- job leaves the channel. A process killed with -9 stops renewing, so its slots
-- stop counting at most one lease TTL after its last renewal.
CREATE TABLE generation.channel_slots (
  slot_id TEXT PRIMARY KEY,
  channel_key TEXT NOT NULL,
  -- The process holding the lease (host/pid/random), for operators reading the table.
  holder TEXT NOT NULL,
  expires_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX channel_slots_by_channel ON generation.channel_slots (channel_key, expires_at);

-- The functions that use these tables are in sql/functions/take_channel_slot.sql and release_channel_slot.sql (one file each, applied at every start).
