-- The settlements of a batch of open holds (billing.settlements_open), one
-- statement per table: each element exactly as billing.settle_request would.
CREATE OR REPLACE FUNCTION billing.settle_open_holds(p_request_ids TEXT[], p_account_ids TEXT[], p_kinds TEXT[], p_delivered INT[], p_release_reasons TEXT[])
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
