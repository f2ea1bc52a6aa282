-- One slot: take_channel_slots for a batch of one. Kept for replicas of the
-- previous release during a rolling upgrade (they take slots one at a time).
-- plpgsql, so that it may be created before take_channel_slots.sql runs.
CREATE OR REPLACE FUNCTION generation.take_channel_slot(
  p_slot TEXT, p_holder TEXT, p_channels TEXT[], p_capacities INT[], p_failure_threshold INT, p_ttl_ms BIGINT
) RETURNS TABLE (channel_key TEXT, refused TEXT, retry_after_ms BIGINT) LANGUAGE plpgsql AS $$
BEGIN
  RETURN QUERY SELECT t.channel_key, t.refused, t.retry_after_ms
    FROM generation.take_channel_slots(ARRAY[p_slot], p_holder, p_channels, p_capacities, p_failure_threshold, p_ttl_ms) AS t;
END $$;
