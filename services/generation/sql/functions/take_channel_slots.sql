-- Takes one slot for each of p_slots (the jobs that asked at the same moment,
-- in their order) on the first of p_channels (in priority order) whose breaker
-- lets a job through and which has fewer than its capacity of live leases; a
-- channel with room for some of them takes those and the rest go on to the next.
-- Answers one row per slot: the channel it was taken on and the room that channel
-- has left after the batch, or why none was:
-- 'full' (some channel was full or its half-open trial busy) or 'unhealthy'
-- (every channel open; retry_after_ms is the time until the first one
-- half-opens). A half-open channel takes one slot, its trial. Rows are locked in
-- the catalog's priority order, the same on every replica, so two takes never
-- wait in a cycle; a channel's live slots are counted once for the whole batch.
--
-- Plain index scans only: slots come and go all the time, and a bitmap scan
-- visits every dead index entry until vacuum, where a plain index scan marks
-- them dead once and skips them after (with many dead rows a take is several
-- times faster; bench/channel-slots.pgbench.sql measures it).
CREATE OR REPLACE FUNCTION generation.take_channel_slots(
  p_slots TEXT[], p_holder TEXT, p_channels TEXT[], p_capacities INT[], p_failure_threshold INT, p_ttl_ms BIGINT
) RETURNS TABLE (slot_id TEXT, channel_key TEXT, refused TEXT, retry_after_ms BIGINT, room_left INT) LANGUAGE plpgsql
SET enable_bitmapscan = off AS $$
DECLARE
  v_state generation.channel_state;
  v_now TIMESTAMPTZ;
  v_in_use INT;
  v_room INT;
  v_trial BOOLEAN;
  v_saw_full BOOLEAN := false;
  v_soonest_ms BIGINT;
  v_next INT := 1;
  v_wanted INT := COALESCE(array_length(p_slots, 1), 0);
BEGIN
  FOR i IN 1 .. COALESCE(array_length(p_channels, 1), 0) LOOP
    EXIT WHEN v_next > v_wanted;
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
    v_room := LEAST(p_capacities[i] - v_in_use, v_wanted - v_next + 1, CASE WHEN v_trial THEN 1 ELSE v_wanted END);
    IF v_room <= 0 THEN
      v_saw_full := true;
      CONTINUE;
    END IF;
    -- Jobs this channel cannot take go on to the next one; if none can, they are refused as full.
    IF v_room < v_wanted - v_next + 1 THEN
      v_saw_full := true;
    END IF;
    INSERT INTO generation.channel_slots (slot_id, channel_key, holder, expires_at)
    SELECT p_slots[n], p_channels[i], p_holder, v_now + p_ttl_ms * interval '1 millisecond'
      FROM generate_series(v_next, v_next + v_room - 1) AS n;
    IF v_trial THEN
      UPDATE generation.channel_state s SET trial_slot = p_slots[v_next] WHERE s.channel_key = p_channels[i];
    END IF;
    RETURN QUERY SELECT p_slots[n], p_channels[i], NULL::text, 0::bigint, p_capacities[i] - v_in_use - v_room FROM generate_series(v_next, v_next + v_room - 1) AS n;
    v_next := v_next + v_room;
  END LOOP;
  IF v_next <= v_wanted THEN
    IF v_saw_full OR v_soonest_ms IS NULL THEN
      RETURN QUERY SELECT p_slots[n], NULL::text, 'full'::text, 0::bigint, 0 FROM generate_series(v_next, v_wanted) AS n;
    ELSE
      RETURN QUERY SELECT p_slots[n], NULL::text, 'unhealthy'::text, v_soonest_ms, 0 FROM generate_series(v_next, v_wanted) AS n;
    END IF;
  END IF;
END $$;
