-- Reserve and settle, each as one statement: the same steps reserve.ts and
-- settle.ts used to send one by one (a dozen round trips per request), run
-- inside the database in the statement's own transaction. The rules are
-- unchanged and still read in TypeScript terms in those files' comments; the
-- invariant tests (overdraft, replay, settlement, two consumers) hold them.

-- Projections move by deltas; UPDATE first, since an INSERT ... ON CONFLICT
-- would check the CHECK constraints against a proposed row of negative deltas.
CREATE FUNCTION billing.move_balance(p_account TEXT, p_balance BIGINT, p_held BIGINT) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  UPDATE billing.balances SET balance_micros = balance_micros + p_balance, held_micros = held_micros + p_held
    WHERE account_id = p_account;
  IF NOT FOUND THEN
    INSERT INTO billing.balances (account_id, balance_micros, held_micros) VALUES (p_account, p_balance, p_held)
      ON CONFLICT (account_id) DO UPDATE SET balance_micros = billing.balances.balance_micros + p_balance,
        held_micros = billing.balances.held_micros + p_held;
  END IF;
END;
$$;

CREATE FUNCTION billing.move_key_spend(p_key TEXT, p_account TEXT, p_captured BIGINT, p_held BIGINT) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  UPDATE billing.key_spend SET captured_micros = captured_micros + p_captured, held_micros = held_micros + p_held
    WHERE key_id = p_key;
  IF NOT FOUND THEN
    INSERT INTO billing.key_spend (key_id, account_id, captured_micros, held_micros) VALUES (p_key, p_account, p_captured, p_held)
      ON CONFLICT (key_id) DO UPDATE SET captured_micros = billing.key_spend.captured_micros + p_captured,
        held_micros = billing.key_spend.held_micros + p_held;
  END IF;
END;
$$;

-- outcome: held | existing | no_price | price_changed | insufficient_account | insufficient_key.
-- The caller sends the price it expects (so it could build the `reserved` event
-- beforehand); a different price in the table answers price_changed, and the
-- caller tries again. The event goes into the outbox here. No advisory lock is
-- needed: the account's row lock orders racing calls (a request belongs to one
-- account), and a duplicate that still gets through finds the record on insert
-- and answers with it, moving nothing.
CREATE FUNCTION billing.reserve_hold(
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

-- outcome: applied | duplicate | unknown_request. A completed always wins over an
-- earlier failed or expiry (the images were delivered), so the result never
-- depends on the order events arrive in; anything else settles a record once.
CREATE FUNCTION billing.settle_request(p_request_id TEXT, p_kind TEXT, p_delivered INT, p_release_reason TEXT)
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

-- cost_records_by_account (account_id, created_at) from 001 is covered by the
-- usage pages' index (account_id, created_at DESC, request_id DESC) from 002.
DROP INDEX IF EXISTS billing.cost_records_by_account;
