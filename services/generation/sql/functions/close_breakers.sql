-- A call on each of these channels succeeded (the upstream answered: images or a
-- refusal): their breakers close, the consecutive failures start again from
-- zero and a half-open trial is over. A channel already closed is not written.
-- Used by release_channel_slot and record_job_successes, so the rule is here once.
--
-- PL/pgSQL, not LANGUAGE sql: PostgreSQL plans the body of an SQL function that is
-- not inlined (an UPDATE never is) again at every call, where PL/pgSQL keeps its
-- plan for the session (pgbench, called from PL/pgSQL as the success statement
-- does: the PL/pgSQL body took less time a call on an idle machine).
CREATE OR REPLACE FUNCTION generation.close_breakers(p_channels TEXT[]) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  UPDATE generation.channel_state s SET consecutive_failures = 0, opened_until = NULL, opened_at = NULL, trial_slot = NULL
   WHERE s.channel_key = ANY(p_channels) AND (s.consecutive_failures <> 0 OR s.trial_slot IS NOT NULL);
END $$;
