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
CREATE OR REPLACE FUNCTION generation.take_channel_slot(
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
