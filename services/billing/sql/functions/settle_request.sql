-- outcome: applied | duplicate | unknown_request. A completed always wins over an
-- earlier failed or expiry (the images were delivered), so the result never
-- depends on the order events arrive in; anything else settles a record once.
-- The images delivered (a completed event's count, at most the images held for;
-- none for a failure or an expiry) are captured at the held unit price, from what
-- is still held first; the rest of the hold is released.
CREATE OR REPLACE FUNCTION billing.settle_request(p_request_id TEXT, p_kind TEXT, p_delivered INT, p_release_reason TEXT)
RETURNS TEXT LANGUAGE plpgsql AS $$
DECLARE
  r billing.cost_records%ROWTYPE;
  v_delivered INT;
  v_still_held BIGINT;
  v_capture BIGINT;
  v_from_hold BIGINT;
  v_release BIGINT;
BEGIN
  SELECT * INTO r FROM billing.cost_records WHERE request_id = p_request_id FOR UPDATE;
  IF NOT FOUND THEN
    RETURN 'unknown_request';
  END IF;
  IF r.settled_by IS NOT NULL AND NOT (r.settled_by <> 'completed' AND p_kind = 'completed') THEN
    RETURN 'duplicate';
  END IF;
  v_delivered := CASE WHEN p_kind = 'completed' THEN least(greatest(p_delivered, 0), r.images_requested) ELSE 0 END;
  v_still_held := r.reserved_micros - r.captured_micros - r.released_micros;
  v_capture := r.unit_price_micros * v_delivered;
  v_from_hold := least(v_capture, v_still_held);
  v_release := v_still_held - v_from_hold;
  IF v_capture > 0 THEN
    INSERT INTO billing.ledger (kind, account_id, key_id, request_id, amount_micros, reason)
      VALUES ('capture', r.account_id, r.key_id, p_request_id, v_capture, v_delivered || ' image(s) delivered')
      ON CONFLICT (request_id, kind) DO NOTHING;
  END IF;
  IF v_release > 0 THEN
    INSERT INTO billing.ledger (kind, account_id, key_id, request_id, amount_micros, reason)
      VALUES ('release', r.account_id, r.key_id, p_request_id, v_release, p_release_reason)
      ON CONFLICT (request_id, kind) DO NOTHING;
  END IF;
  PERFORM billing.move_balance(r.account_id, -v_capture, -(v_from_hold + v_release));
  PERFORM billing.move_key_spend(r.key_id, r.account_id, v_capture, -(v_from_hold + v_release));
  UPDATE billing.cost_records SET settled_by = p_kind, settled_at = now(), images_delivered = v_delivered,
      captured_micros = captured_micros + v_capture, released_micros = released_micros + v_release
    WHERE request_id = p_request_id;
  RETURN 'applied';
END;
$$;
