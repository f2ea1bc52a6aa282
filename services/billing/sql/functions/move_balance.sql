-- Projections move by deltas; UPDATE first, since an INSERT ... ON CONFLICT
-- would check the CHECK constraints against a proposed row of negative deltas.
CREATE OR REPLACE FUNCTION billing.move_balance(p_account TEXT, p_balance BIGINT, p_held BIGINT) RETURNS void
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
