-- Reservations of concurrent requests in one statement (reserve.ts gathers the
-- ones that arrive while a call is in flight): one round trip and one durable
-- commit for many holds. Each element is billing.reserve_hold, the one
-- implementation of a reservation, so a batch keeps every rule a hold alone
-- keeps and answers each element exactly as it would alone. Elements run in
-- order of account, so holds for one account see each other's effects and two
-- batches take account rows in the same order (no lock cycle between them).
-- Answers one row per element, numbered by its place in the arrays.
CREATE OR REPLACE FUNCTION billing.reserve_holds(
  p_request_ids TEXT[], p_account_ids TEXT[], p_key_ids TEXT[], p_key_limits BIGINT[],
  p_models TEXT[], p_tiers TEXT[], p_sizes TEXT[], p_images INT[], p_expires_at TIMESTAMPTZ[],
  p_expected_prices BIGINT[], p_reasons TEXT[], p_topic TEXT, p_event_ids TEXT[], p_events BYTEA[])
RETURNS TABLE (item INT, outcome TEXT, unit_price_micros BIGINT, amount_micros BIGINT, hold_expires_at TIMESTAMPTZ, left_micros BIGINT)
LANGUAGE plpgsql AS $$
DECLARE
  i INT;
BEGIN
  FOR i IN SELECT a.position FROM unnest(p_account_ids) WITH ORDINALITY AS a (account_id, position) ORDER BY a.account_id, a.position LOOP
    RETURN QUERY SELECT i, h.outcome, h.unit_price_micros, h.amount_micros, h.hold_expires_at, h.left_micros
      FROM billing.reserve_hold(p_request_ids[i], p_account_ids[i], p_key_ids[i], p_key_limits[i], p_models[i], p_tiers[i],
        p_sizes[i], p_images[i], p_expires_at[i], p_expected_prices[i], p_reasons[i], p_topic, p_event_ids[i], p_events[i]) AS h;
  END LOOP;
END;
$$;
