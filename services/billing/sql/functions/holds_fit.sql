-- True when every element would be `held` by the loop (see reserve_holds.sql). Called with
-- the batch's account rows locked; locks the limited keys' rows (making any that
-- are missing, as reserve_hold does) before reading them.
CREATE OR REPLACE FUNCTION billing.holds_fit(
  p_request_ids TEXT[], p_account_ids TEXT[], p_key_ids TEXT[], p_key_limits BIGINT[],
  p_models TEXT[], p_tiers TEXT[], p_images INT[], p_expected_prices BIGINT[])
RETURNS BOOLEAN LANGUAGE plpgsql SET enable_seqscan = off SET plan_cache_mode = force_generic_plan AS $$
DECLARE
  v_limited TEXT[];
BEGIN
  IF (SELECT count(DISTINCT r) FROM unnest(p_request_ids) AS r) <> cardinality(p_request_ids)
     OR EXISTS (SELECT 1 FROM billing.cost_records c WHERE c.request_id = ANY(p_request_ids)) THEN
    RETURN false;
  END IF;
  -- Each price as expected (a missing one fails the join's count).
  IF (SELECT count(*) FROM unnest(p_models, p_tiers, p_expected_prices) AS u (model, tier, expected)
        JOIN billing.prices p ON p.model = u.model AND p.tier = u.tier AND p.price_micros = u.expected) <> cardinality(p_request_ids) THEN
    RETURN false;
  END IF;
  -- Each key with one account and one limit (or none) in the batch.
  IF EXISTS (SELECT 1 FROM unnest(p_key_ids, p_account_ids, p_key_limits) AS u (key_id, account_id, key_limit)
               GROUP BY u.key_id HAVING count(DISTINCT u.account_id) > 1 OR count(DISTINCT u.key_limit) > 1
                 OR (count(u.key_limit) > 0 AND count(u.key_limit) < count(*))) THEN
    RETURN false;
  END IF;
  -- Every account has a row, with enough left for all its holds.
  IF EXISTS (SELECT 1 FROM (SELECT u.account_id, sum(u.expected * u.images) AS total
                              FROM unnest(p_account_ids, p_expected_prices, p_images) AS u (account_id, expected, images) GROUP BY u.account_id) AS need
               LEFT JOIN billing.balances b ON b.account_id = need.account_id
              WHERE b.account_id IS NULL OR b.balance_micros - b.held_micros < need.total) THEN
    RETURN false;
  END IF;
  v_limited := ARRAY(SELECT DISTINCT u.key_id FROM unnest(p_key_ids, p_key_limits) AS u (key_id, key_limit) WHERE u.key_limit IS NOT NULL ORDER BY 1);
  IF cardinality(v_limited) = 0 THEN
    RETURN true;
  END IF;
  INSERT INTO billing.key_spend (key_id, account_id)
    SELECT DISTINCT ON (u.key_id) u.key_id, u.account_id FROM unnest(p_key_ids, p_account_ids) AS u (key_id, account_id)
     WHERE u.key_id = ANY(v_limited) ORDER BY u.key_id
    ON CONFLICT (key_id) DO NOTHING;
  PERFORM 1 FROM billing.key_spend k WHERE k.key_id = ANY(v_limited) ORDER BY k.key_id FOR UPDATE;
  RETURN NOT EXISTS (
    SELECT 1 FROM (SELECT u.key_id, min(u.key_limit) AS key_limit, sum(u.expected * u.images) AS total
                     FROM unnest(p_key_ids, p_key_limits, p_expected_prices, p_images) AS u (key_id, key_limit, expected, images)
                    WHERE u.key_limit IS NOT NULL GROUP BY u.key_id) AS need
      JOIN billing.key_spend k ON k.key_id = need.key_id
     WHERE need.key_limit - k.captured_micros - k.held_micros < need.total);
END;
$$;
