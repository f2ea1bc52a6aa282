-- Admits one job or says which limit refused it. NULL limits are not checked.
-- Each statement of a plpgsql function reads a fresh snapshot, so once the
-- account's row is locked the counts below include every admission committed
-- before, by any replica. Only admitted requests are counted.
CREATE OR REPLACE FUNCTION generation.admit_job(
  p_request TEXT, p_account TEXT, p_key TEXT,
  p_max_concurrent INT, p_account_rpm INT, p_key_rpm INT, p_lease_ms BIGINT
) RETURNS TABLE (refused TEXT, retry_after_seconds INT) LANGUAGE plpgsql AS $$
DECLARE
  v_window TIMESTAMPTZ := date_trunc('minute', clock_timestamp());
  v_window_left INT := GREATEST(1, CEIL(EXTRACT(EPOCH FROM (v_window + interval '1 minute' - clock_timestamp())))::int);
  v_account_subject TEXT := 'account:' || p_account;
  v_key_subject TEXT := 'key:' || p_key;
  v_count INT;
BEGIN
  INSERT INTO generation.account_admission (account_id) VALUES (p_account) ON CONFLICT DO NOTHING;
  PERFORM 1 FROM generation.account_admission WHERE account_id = p_account FOR UPDATE;

  IF p_account_rpm IS NOT NULL THEN
    SELECT w.requests INTO v_count FROM generation.request_windows w WHERE w.subject = v_account_subject AND w.window_start = v_window;
    IF COALESCE(v_count, 0) >= p_account_rpm THEN
      RETURN QUERY SELECT 'account_rpm'::text, v_window_left;
      RETURN;
    END IF;
  END IF;
  IF p_key_rpm IS NOT NULL THEN
    SELECT w.requests INTO v_count FROM generation.request_windows w WHERE w.subject = v_key_subject AND w.window_start = v_window;
    IF COALESCE(v_count, 0) >= p_key_rpm THEN
      RETURN QUERY SELECT 'key_rpm'::text, v_window_left;
      RETURN;
    END IF;
  END IF;
  IF p_max_concurrent IS NOT NULL THEN
    DELETE FROM generation.job_leases l WHERE l.account_id = p_account AND l.expires_at <= clock_timestamp();
    SELECT count(*) INTO v_count FROM generation.job_leases l WHERE l.account_id = p_account;
    IF v_count >= p_max_concurrent THEN
      RETURN QUERY SELECT 'concurrent'::text, 0;
      RETURN;
    END IF;
    INSERT INTO generation.job_leases (request_id, account_id, expires_at)
    VALUES (p_request, p_account, clock_timestamp() + p_lease_ms * interval '1 millisecond')
    ON CONFLICT (request_id) DO NOTHING;
  END IF;

  IF p_account_rpm IS NOT NULL OR p_key_rpm IS NOT NULL THEN
    -- Earlier windows of these subjects decide nothing any more.
    DELETE FROM generation.request_windows w
     WHERE w.subject IN (v_account_subject, v_key_subject) AND w.window_start < v_window;
    INSERT INTO generation.request_windows (subject, window_start, requests)
    SELECT s.subject, v_window, 1
      FROM (VALUES (v_account_subject, p_account_rpm), (v_key_subject, p_key_rpm)) AS s (subject, lim)
     WHERE s.lim IS NOT NULL
    ON CONFLICT (subject, window_start) DO UPDATE SET requests = generation.request_windows.requests + 1;
  END IF;
  RETURN QUERY SELECT NULL::text, 0;
END $$;
