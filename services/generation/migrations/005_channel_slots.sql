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

-- Takes a slot on the first of p_channels (in priority order) whose breaker lets
-- a job through and which has fewer than its capacity of live leases. Answers
-- the channel taken, or why none was: 'full' (some channel was full or its
-- half-open trial busy) or 'unhealthy' (every channel open; retry_after_ms is
-- the time until the first one half-opens). Rows are locked in the catalog's
-- priority order, the same on every replica, so two takes never wait in a cycle.
--
-- Plain index scans only: slots come and go all the time, and a bitmap scan
-- visits every dead index entry until vacuum, where a plain index scan marks
-- them dead once and skips them after (pgbench with 80,000 dead rows: 0.4 ms
-- against 3 ms a take; bench/channel-slots.pgbench.sql).
CREATE FUNCTION generation.take_channel_slot(
  p_slot TEXT, p_holder TEXT, p_channels TEXT[], p_capacities INT[], p_failure_threshold INT, p_ttl_ms BIGINT
) RETURNS TABLE (channel_key TEXT, refused TEXT, retry_after_ms BIGINT) LANGUAGE plpgsql
SET enable_bitmapscan = off AS $$
DECLARE
  v_state generation.channel_state;
  v_now TIMESTAMPTZ;
  v_in_use INT;
  v_trial BOOLEAN;
  v_saw_full BOOLEAN := false;
  v_soonest_ms BIGINT;
BEGIN
  FOR i IN 1 .. COALESCE(array_length(p_channels, 1), 0) LOOP
    SELECT * INTO v_state FROM generation.channel_state s WHERE s.channel_key = p_channels[i] FOR UPDATE;
    IF NOT FOUND THEN
      INSERT INTO generation.channel_state (channel_key) VALUES (p_channels[i]) ON CONFLICT DO NOTHING;
      SELECT * INTO v_state FROM generation.channel_state s WHERE s.channel_key = p_channels[i] FOR UPDATE;
    END IF;
    v_now := clock_timestamp();
    v_trial := false;
    IF v_state.consecutive_failures >= p_failure_threshold THEN
      IF v_state.opened_until > v_now THEN
        v_soonest_ms := LEAST(COALESCE(v_soonest_ms, 9223372036854775807),
                              CEIL(EXTRACT(EPOCH FROM (v_state.opened_until - v_now)) * 1000)::bigint);
        CONTINUE;
      END IF;
      -- Half-open: a trial whose lease is still live is running somewhere.
      IF v_state.trial_slot IS NOT NULL AND EXISTS (
        SELECT 1 FROM generation.channel_slots c WHERE c.slot_id = v_state.trial_slot AND c.expires_at > v_now
      ) THEN
        v_saw_full := true;
        CONTINUE;
      END IF;
      v_trial := true;
    END IF;
    -- Leases of processes that died count no more; their rows go here.
    DELETE FROM generation.channel_slots c WHERE c.channel_key = p_channels[i] AND c.expires_at <= v_now;
    SELECT count(*) INTO v_in_use FROM generation.channel_slots c WHERE c.channel_key = p_channels[i];
    IF v_in_use >= p_capacities[i] THEN
      v_saw_full := true;
      CONTINUE;
    END IF;
    INSERT INTO generation.channel_slots (slot_id, channel_key, holder, expires_at)
    VALUES (p_slot, p_channels[i], p_holder, v_now + p_ttl_ms * interval '1 millisecond');
    IF v_trial THEN
      UPDATE generation.channel_state s SET trial_slot = p_slot WHERE s.channel_key = p_channels[i];
    END IF;
    RETURN QUERY SELECT p_channels[i], NULL::text, 0::bigint;
    RETURN;
  END LOOP;
  IF v_saw_full OR v_soonest_ms IS NULL THEN
    RETURN QUERY SELECT NULL::text, 'full'::text, 0::bigint;
  ELSE
    RETURN QUERY SELECT NULL::text, 'unhealthy'::text, v_soonest_ms;
  END IF;
END $$;

-- Gives a slot back and tells the channel's breaker how the call went:
-- 'succeeded' (images or a refusal: the upstream answered) closes it,
-- 'failed' counts a consecutive failure and opens it at the threshold for
-- p_cooldown_ms, 'cancelled' (the call never happened) teaches it nothing.
-- A success on a closed breaker writes nothing to channel_state.
CREATE FUNCTION generation.release_channel_slot(
  p_slot TEXT, p_channel TEXT, p_outcome TEXT, p_failure_threshold INT, p_cooldown_ms BIGINT
) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM generation.channel_slots c WHERE c.slot_id = p_slot;
  IF p_outcome = 'succeeded' THEN
    UPDATE generation.channel_state s SET consecutive_failures = 0, opened_until = NULL, trial_slot = NULL
     WHERE s.channel_key = p_channel AND (s.consecutive_failures <> 0 OR s.trial_slot IS NOT NULL);
  ELSIF p_outcome = 'failed' THEN
    UPDATE generation.channel_state s
       SET consecutive_failures = s.consecutive_failures + 1,
           opened_until = CASE WHEN s.consecutive_failures + 1 >= p_failure_threshold
                               THEN clock_timestamp() + p_cooldown_ms * interval '1 millisecond'
                               ELSE s.opened_until END,
           trial_slot = CASE WHEN s.trial_slot = p_slot THEN NULL ELSE s.trial_slot END
     WHERE s.channel_key = p_channel;
  ELSE
    UPDATE generation.channel_state s SET trial_slot = NULL WHERE s.channel_key = p_channel AND s.trial_slot = p_slot;
  END IF;
END $$;
