-- outcome: held | existing | no_price | price_changed | insufficient_account | insufficient_key.
-- The caller sends the price it expects (so it could build the `reserved` event
-- beforehand); a different price in the table answers price_changed, and the
-- caller tries again. The event goes into the outbox here. No advisory lock is
-- needed: the account's row lock orders racing calls (a request belongs to one
-- account), and a duplicate that still gets through finds the record on insert
-- and answers with it, moving nothing.
CREATE OR REPLACE FUNCTION billing.reserve_hold(
  p_request_id TEXT, p_account_id TEXT, p_key_id TEXT, p_key_limit BIGINT,
  p_model TEXT, p_tier TEXT, p_size TEXT, p_images INT, p_expires_at TIMESTAMPTZ,
  p_expected_price BIGINT, p_reason TEXT, p_topic TEXT, p_event_id TEXT, p_event BYTEA,
  OUT outcome TEXT, OUT unit_price_micros BIGINT, OUT amount_micros BIGINT,
  OUT hold_expires_at TIMESTAMPTZ, OUT left_micros BIGINT)
LANGUAGE plpgsql AS $$
DECLARE
  v_balance BIGINT;
  v_held BIGINT;
  v_captured BIGINT;
BEGIN
  -- The account's row locked: parallel reservations of one account take turns here,
  -- and so do retries of one request (a request belongs to one account).
  SELECT b.balance_micros, b.held_micros INTO v_balance, v_held FROM billing.balances b WHERE b.account_id = p_account_id FOR UPDATE;

  SELECT c.unit_price_micros, c.reserved_micros, c.hold_expires_at INTO unit_price_micros, amount_micros, hold_expires_at
    FROM billing.cost_records c WHERE c.request_id = p_request_id;
  IF FOUND THEN
    outcome := 'existing';
    RETURN;
  END IF;

  SELECT p.price_micros INTO unit_price_micros FROM billing.prices p WHERE p.model = p_model AND p.tier = p_tier;
  IF NOT FOUND THEN
    outcome := 'no_price';
    RETURN;
  END IF;
  IF unit_price_micros <> p_expected_price THEN
    outcome := 'price_changed';
    RETURN;
  END IF;
  amount_micros := unit_price_micros * p_images;
  left_micros := coalesce(v_balance, 0) - coalesce(v_held, 0);
  IF left_micros < amount_micros THEN
    outcome := 'insufficient_account';
    RETURN;
  END IF;

  IF p_key_limit IS NOT NULL THEN
    INSERT INTO billing.key_spend (key_id, account_id) VALUES (p_key_id, p_account_id) ON CONFLICT (key_id) DO NOTHING;
    SELECT k.captured_micros, k.held_micros INTO v_captured, v_held FROM billing.key_spend k WHERE k.key_id = p_key_id FOR UPDATE;
    left_micros := p_key_limit - v_captured - v_held;
    IF left_micros < amount_micros THEN
      outcome := 'insufficient_key';
      RETURN;
    END IF;
  END IF;

  hold_expires_at := p_expires_at;
  -- The record first: if a racing duplicate made it (possible only for an account with
  -- no balances row yet, which has nothing to lock), answer with that hold.
  INSERT INTO billing.cost_records (request_id, account_id, key_id, model, size, tier, images_requested,
      unit_price_micros, reserved_micros, hold_expires_at)
    VALUES (p_request_id, p_account_id, p_key_id, p_model, p_size, p_tier, p_images, unit_price_micros, amount_micros, p_expires_at)
    ON CONFLICT (request_id) DO NOTHING;
  IF NOT FOUND THEN
    SELECT c.unit_price_micros, c.reserved_micros, c.hold_expires_at INTO unit_price_micros, amount_micros, hold_expires_at
      FROM billing.cost_records c WHERE c.request_id = p_request_id;
    outcome := 'existing';
    RETURN;
  END IF;
  INSERT INTO billing.ledger (kind, account_id, key_id, request_id, amount_micros, reason)
    VALUES ('reserve', p_account_id, p_key_id, p_request_id, amount_micros, p_reason);
  PERFORM billing.move_balance(p_account_id, 0, amount_micros);
  PERFORM billing.move_key_spend(p_key_id, p_account_id, 0, amount_micros);
  INSERT INTO billing.outbox (topic, key, event_id, value) VALUES (p_topic, p_account_id, p_event_id, p_event);
  outcome := 'held';
END;
$$;
