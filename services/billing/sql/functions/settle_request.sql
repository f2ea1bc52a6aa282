-- outcome: applied | duplicate | unknown_request. A completed always wins over an
-- earlier failed or expiry (the images were delivered), so the result never
-- depends on the order events arrive in; anything else settles a record once.
-- The money it moves is billing.settlement_amounts', which the batch
-- (billing.settle_open_holds) uses too.
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
