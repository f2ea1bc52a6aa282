-- A key's spend against its limit moves by deltas, as billing.move_balance moves
-- an account's balance (UPDATE first, for the same reason).
CREATE OR REPLACE FUNCTION billing.move_key_spend(p_key TEXT, p_account TEXT, p_captured BIGINT, p_held BIGINT) RETURNS void
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
