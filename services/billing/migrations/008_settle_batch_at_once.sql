-- billing.settle_requests settles a batch with one statement per table when every
-- element settles an open hold, instead of running billing.settle_request for
-- each element (about six statements each, one balances and one key_spend update
-- per settlement). As migration 007 does for reservations. Batches of 8 on one
-- account, 400 in a transaction: 109-119 µs per settlement that way, 63-68 µs
-- with the statements below (three runs each).
--
-- "Open" means: each request of the batch named once, its cost record found and
-- not settled yet, its account's balances row and its key's key_spend row there
-- (a hold makes both). Then settle_request would answer `applied` for each, and
-- the statements below write what it would: the same ledger entries (capture,
-- then release, each element in the loop's order: the events' accounts, then
-- place in the batch), balances, key spend and cost records, and `applied` for
-- each. Any other batch (a duplicate, a late completion after a release, an
-- unknown request) runs the loop of migration 006 unchanged, renamed
-- billing.settle_requests_each.
--
-- Locks: the batch's cost records in the loop's order, then the account rows in
-- account order (as reservations take them), then the key rows, which are only
-- ever locked by a transaction holding their account's row. One consumer settles at a time; the
-- hold sweeper settles one request per transaction, holding at most one record
-- and its account's row, so it cannot close a cycle with a batch.
--
-- As in migration 007 the functions run with plan_cache_mode force_generic_plan
-- (one plan per statement per session, not one per call) and enable_seqscan off
-- (plans that read rows by their keys, whatever the tables' sizes when they were
-- made; settle-batch.test.ts).
--
-- The money of a settlement is written once, in billing.settlement_amounts, which
-- settle_request (replaced below with that one change) and the batch both use.
ALTER FUNCTION billing.settle_requests(TEXT[], TEXT[], TEXT[], INT[], TEXT[]) RENAME TO settle_requests_each;

-- What a settlement moves: the images delivered (a completed event's count, at most
-- the images held for; none for a failure or an expiry) are captured at the held
-- unit price, from what is still held first; the rest of the hold is released.
-- SQL and immutable, so PostgreSQL inlines it into the statements that use it.
CREATE FUNCTION billing.settlement_amounts(p_kind TEXT, p_delivered INT, p_images_requested INT, p_unit_price BIGINT, p_still_held BIGINT)
RETURNS TABLE (delivered INT, capture BIGINT, from_hold BIGINT, release BIGINT)
LANGUAGE sql IMMUTABLE AS $$
  SELECT d.delivered, d.capture, least(d.capture, p_still_held), p_still_held - least(d.capture, p_still_held)
    FROM (SELECT n.delivered, p_unit_price * n.delivered AS capture
            FROM (SELECT CASE WHEN p_kind = 'completed' THEN least(greatest(p_delivered, 0), p_images_requested) ELSE 0 END AS delivered) AS n) AS d
$$;

-- Migration 003's settle_request, its arithmetic now billing.settlement_amounts'.
CREATE OR REPLACE FUNCTION billing.settle_request(p_request_id TEXT, p_kind TEXT, p_delivered INT, p_release_reason TEXT)
RETURNS TEXT LANGUAGE plpgsql AS $$
DECLARE
  r billing.cost_records%ROWTYPE;
  m RECORD;
BEGIN
  SELECT * INTO r FROM billing.cost_records WHERE request_id = p_request_id FOR UPDATE;
  IF NOT FOUND THEN
    RETURN 'unknown_request';
  END IF;
  IF r.settled_by IS NOT NULL AND NOT (r.settled_by <> 'completed' AND p_kind = 'completed') THEN
    RETURN 'duplicate';
  END IF;
  SELECT * INTO m FROM billing.settlement_amounts(p_kind, p_delivered, r.images_requested, r.unit_price_micros,
    r.reserved_micros - r.captured_micros - r.released_micros);
  IF m.capture > 0 THEN
    INSERT INTO billing.ledger (kind, account_id, key_id, request_id, amount_micros, reason)
      VALUES ('capture', r.account_id, r.key_id, p_request_id, m.capture, m.delivered || ' image(s) delivered')
      ON CONFLICT (request_id, kind) DO NOTHING;
  END IF;
  IF m.release > 0 THEN
    INSERT INTO billing.ledger (kind, account_id, key_id, request_id, amount_micros, reason)
      VALUES ('release', r.account_id, r.key_id, p_request_id, m.release, p_release_reason)
      ON CONFLICT (request_id, kind) DO NOTHING;
  END IF;
  PERFORM billing.move_balance(r.account_id, -m.capture, -(m.from_hold + m.release));
  PERFORM billing.move_key_spend(r.key_id, r.account_id, m.capture, -(m.from_hold + m.release));
  UPDATE billing.cost_records SET settled_by = p_kind, settled_at = now(), images_delivered = m.delivered,
      captured_micros = captured_micros + m.capture, released_micros = released_micros + m.release
    WHERE request_id = p_request_id;
  RETURN 'applied';
END;
$$;

CREATE FUNCTION billing.settle_requests(p_request_ids TEXT[], p_account_ids TEXT[], p_kinds TEXT[], p_delivered INT[], p_release_reasons TEXT[])
RETURNS TABLE (item INT, result TEXT)
LANGUAGE plpgsql SET enable_seqscan = off SET plan_cache_mode = force_generic_plan AS $$
BEGIN
  IF billing.settlements_open(p_request_ids, p_account_ids) THEN
    RETURN QUERY SELECT * FROM billing.settle_open_holds(p_request_ids, p_account_ids, p_kinds, p_delivered, p_release_reasons);
  ELSE
    RETURN QUERY SELECT * FROM billing.settle_requests_each(p_request_ids, p_account_ids, p_kinds, p_delivered, p_release_reasons);
  END IF;
END;
$$;

-- True when every element settles an open hold (see above). Locks the batch's
-- cost records, in the loop's order, before reading them.
CREATE FUNCTION billing.settlements_open(p_request_ids TEXT[], p_account_ids TEXT[])
RETURNS BOOLEAN LANGUAGE plpgsql SET enable_seqscan = off SET plan_cache_mode = force_generic_plan AS $$
BEGIN
  IF (SELECT count(DISTINCT r) FROM unnest(p_request_ids) AS r) <> cardinality(p_request_ids) THEN
    RETURN false;
  END IF;
  PERFORM 1 FROM unnest(p_request_ids, p_account_ids) WITH ORDINALITY AS e (request_id, account_id, position)
    JOIN billing.cost_records c ON c.request_id = e.request_id
   ORDER BY e.account_id, e.position
     FOR UPDATE OF c;
  -- Unsettled counted in a FILTER, not the WHERE: with `settled_by IS NULL` in the WHERE
  -- the planner may read cost_records_open_holds, every open hold, to intersect it
  -- with the batch's few (2 ms for 48,000 open holds).
  RETURN (SELECT count(*) FILTER (WHERE c.settled_by IS NULL) FROM billing.cost_records c
            JOIN billing.balances b ON b.account_id = c.account_id
            JOIN billing.key_spend k ON k.key_id = c.key_id
           WHERE c.request_id = ANY(p_request_ids)) = cardinality(p_request_ids);
END;
$$;

-- The settlements of a batch of open holds (billing.settlements_open), one
-- statement per table: each element exactly as billing.settle_request would.
CREATE FUNCTION billing.settle_open_holds(p_request_ids TEXT[], p_account_ids TEXT[], p_kinds TEXT[], p_delivered INT[], p_release_reasons TEXT[])
RETURNS TABLE (item INT, result TEXT)
LANGUAGE plpgsql SET enable_seqscan = off SET plan_cache_mode = force_generic_plan AS $$
BEGIN
  -- The account rows in account order, as reservations take them (the UPDATE below
  -- would take them in whatever order its join produces).
  PERFORM 1 FROM billing.balances b
    WHERE b.account_id = ANY(ARRAY(SELECT c.account_id FROM billing.cost_records c WHERE c.request_id = ANY(p_request_ids)))
    ORDER BY b.account_id FOR UPDATE;
  RETURN QUERY
  WITH money AS MATERIALIZED (
    SELECT e.position, e.request_id, e.event_account, e.kind, e.release_reason, c.account_id, c.key_id, a.*
      FROM unnest(p_request_ids, p_account_ids, p_kinds, p_delivered, p_release_reasons) WITH ORDINALITY
             AS e (request_id, event_account, kind, delivered, release_reason, position)
      JOIN billing.cost_records c ON c.request_id = e.request_id
      CROSS JOIN LATERAL billing.settlement_amounts(e.kind, e.delivered, c.images_requested, c.unit_price_micros,
                                                    c.reserved_micros - c.captured_micros - c.released_micros) AS a
  ), entries AS (
    INSERT INTO billing.ledger (kind, account_id, key_id, request_id, amount_micros, reason)
      SELECT entry.kind, entry.account_id, entry.key_id, entry.request_id, entry.amount, entry.reason
        FROM (SELECT 'capture' AS kind, m.account_id, m.key_id, m.request_id, m.capture AS amount, m.delivered || ' image(s) delivered' AS reason,
                     m.event_account, m.position, 1 AS step
                FROM money m WHERE m.capture > 0
              UNION ALL
              SELECT 'release', m.account_id, m.key_id, m.request_id, m.release, m.release_reason, m.event_account, m.position, 2
                FROM money m WHERE m.release > 0) AS entry
       ORDER BY entry.event_account, entry.position, entry.step
    ON CONFLICT (request_id, kind) DO NOTHING
  ), moved AS (
    UPDATE billing.balances b SET balance_micros = b.balance_micros - t.captured, held_micros = b.held_micros - t.freed
      FROM (SELECT m.account_id, sum(m.capture)::BIGINT AS captured, sum(m.from_hold + m.release)::BIGINT AS freed FROM money m GROUP BY m.account_id) AS t
     WHERE b.account_id = t.account_id
  ), spent AS (
    UPDATE billing.key_spend k SET captured_micros = k.captured_micros + t.captured, held_micros = k.held_micros - t.freed
      FROM (SELECT m.key_id, sum(m.capture)::BIGINT AS captured, sum(m.from_hold + m.release)::BIGINT AS freed FROM money m GROUP BY m.key_id) AS t
     WHERE k.key_id = t.key_id
  ), settled AS (
    UPDATE billing.cost_records c SET settled_by = m.kind, settled_at = now(), images_delivered = m.delivered,
        captured_micros = c.captured_micros + m.capture, released_micros = c.released_micros + m.release
      FROM money m WHERE c.request_id = m.request_id
  )
  SELECT m.position::INT, 'applied'::TEXT FROM money m;
END;
$$;
