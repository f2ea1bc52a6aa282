-- Gives a slot back and tells the channel's breaker how the call went:
-- 'succeeded' (images or a refusal: the upstream answered) closes it,
-- 'failed' counts a consecutive failure, keeps p_failure_detail as the channel's
-- last failure (channel health shows it) and opens the breaker at the threshold for
-- p_cooldown_ms (opened_at says when, so a start can bound it by its own
-- cool-down: channel-slots.ts boundOpenBreakers), 'cancelled' (the call never happened) teaches it nothing.
-- A success on a closed breaker writes nothing to channel_state.
-- Answers true when this failure opened the breaker: it was closed, or half-open
-- with its cool-down over, so each opening is reported once, by the replica that caused it.
CREATE OR REPLACE FUNCTION generation.release_channel_slot(
  p_slot TEXT, p_channel TEXT, p_outcome TEXT, p_failure_threshold INT, p_cooldown_ms BIGINT, p_failure_detail TEXT
) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
  v_opened boolean := false;
BEGIN
  DELETE FROM generation.channel_slots c WHERE c.slot_id = p_slot;
  IF p_outcome = 'succeeded' THEN
    PERFORM generation.close_breakers(ARRAY[p_channel]);
  ELSIF p_outcome = 'failed' THEN
    -- Opens now: this failure reaches the threshold on a breaker that was closed, or half-open.
    SELECT s.consecutive_failures + 1 >= p_failure_threshold
           AND (s.consecutive_failures < p_failure_threshold OR coalesce(s.opened_until <= clock_timestamp(), true))
      INTO v_opened
      FROM generation.channel_state s WHERE s.channel_key = p_channel FOR UPDATE;
    UPDATE generation.channel_state s
       SET consecutive_failures = s.consecutive_failures + 1,
           opened_until = CASE WHEN s.consecutive_failures + 1 >= p_failure_threshold
                               THEN clock_timestamp() + p_cooldown_ms * interval '1 millisecond'
                               ELSE s.opened_until END,
           opened_at = CASE WHEN s.consecutive_failures + 1 >= p_failure_threshold
                            THEN clock_timestamp() ELSE s.opened_at END,
           trial_slot = CASE WHEN s.trial_slot = p_slot THEN NULL ELSE s.trial_slot END,
           last_failure_detail = p_failure_detail,
           last_failure_at = clock_timestamp()
     WHERE s.channel_key = p_channel;
  ELSE
    UPDATE generation.channel_state s SET trial_slot = NULL WHERE s.channel_key = p_channel AND s.trial_slot = p_slot;
  END IF;
  RETURN coalesce(v_opened, false);
END $$;
