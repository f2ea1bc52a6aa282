-- The outcomes of jobs that succeeded (job-store.ts jobSuccessWriter), one
-- statement per table, in one durable commit: each job's images, its status
-- 'succeeded', its `completed` event in the outbox (in the order given), and
-- what it held: its channel slot (a success closes the channel's breaker,
-- close_breakers) and its concurrent-job lease.
--
-- A function, not a statement with a dozen parameters, so that PostgreSQL plans
-- it once per session: prepared as one statement it was planned again at every
-- call (about half its time at one connection), since a custom plan for the
-- values given looked cheaper than a generic one. The generic plans here look
-- rows up by their keys (enable_seqscan off), whatever the tables' sizes when
-- the plans were made.
CREATE OR REPLACE FUNCTION generation.record_job_successes(
  p_image_ids TEXT[], p_image_requests TEXT[], p_positions INT[], p_content_types TEXT[],
  p_widths INT[], p_heights INT[], p_bytes INT[], p_expires_at TIMESTAMPTZ[],
  p_requests TEXT[], p_delivered INT[],
  p_slots TEXT[], p_slot_channels TEXT[], p_leases TEXT[],
  p_topics TEXT[], p_keys TEXT[], p_event_ids TEXT[], p_values BYTEA[],
  -- p_new_*: rows of jobs that ended before their start rows were written, sent only by replicas of
  -- earlier code (which deferred start rows) during an upgrade; current code sends the first 17.
  p_new_requests TEXT[] DEFAULT '{}', p_new_accounts TEXT[] DEFAULT '{}', p_new_keys TEXT[] DEFAULT '{}',
  p_new_models TEXT[] DEFAULT '{}', p_new_sizes TEXT[] DEFAULT '{}', p_new_tiers TEXT[] DEFAULT '{}',
  p_new_qualities TEXT[] DEFAULT '{}', p_new_images_requested INT[] DEFAULT '{}', p_new_formats TEXT[] DEFAULT '{}',
  p_new_channels TEXT[] DEFAULT '{}', p_new_ages_ms INT[] DEFAULT '{}'
) RETURNS void LANGUAGE plpgsql SET enable_seqscan = off SET plan_cache_mode = force_generic_plan AS $$
BEGIN
  -- Jobs of earlier code that ended before their start rows were written: their rows, already succeeded.
  IF cardinality(p_new_requests) > 0 THEN
    INSERT INTO generation.jobs (request_id, account_id, key_id, model, size, tier, quality, images_requested,
                                 response_format, channel, created_at, status, images_delivered, finished_at)
      SELECT n.request_id, n.account_id, n.key_id, n.model, n.size, n.tier, n.quality, n.images_requested,
             n.response_format, n.channel, now() - n.age_ms * interval '1 millisecond', 'succeeded', done.images, now()
        FROM unnest(p_new_requests, p_new_accounts, p_new_keys, p_new_models, p_new_sizes, p_new_tiers, p_new_qualities,
                    p_new_images_requested, p_new_formats, p_new_channels, p_new_ages_ms)
               AS n (request_id, account_id, key_id, model, size, tier, quality, images_requested, response_format, channel, age_ms)
        JOIN unnest(p_requests, p_delivered) AS done (request_id, images) ON done.request_id = n.request_id;
  END IF;
  INSERT INTO generation.images (image_id, request_id, position, content_type, width, height, bytes, expires_at)
    SELECT * FROM unnest(p_image_ids, p_image_requests, p_positions, p_content_types, p_widths, p_heights, p_bytes, p_expires_at);
  UPDATE generation.jobs AS job SET status = 'succeeded', images_delivered = done.images, finished_at = now()
    FROM unnest(p_requests, p_delivered) AS done (request_id, images)
   WHERE job.request_id = done.request_id AND NOT (job.request_id = ANY(p_new_requests));
  IF cardinality(p_slots) > 0 THEN
    DELETE FROM generation.channel_slots c WHERE c.slot_id = ANY(p_slots);
  END IF;
  -- Earlier code kept some slots for its next job: those are not in p_slots, their channels are here.
  IF cardinality(p_slot_channels) > 0 THEN
    PERFORM generation.close_breakers(p_slot_channels);
  END IF;
  IF cardinality(p_leases) > 0 THEN
    DELETE FROM generation.job_leases l WHERE l.request_id = ANY(p_leases);
  END IF;
  INSERT INTO generation.outbox (topic, key, event_id, value)
    SELECT e.topic, e.key, e.event_id, e.value
      FROM unnest(p_topics, p_keys, p_event_ids, p_values) WITH ORDINALITY AS e (topic, key, event_id, value, position)
     ORDER BY e.position;
END $$;
