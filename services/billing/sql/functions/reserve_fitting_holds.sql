-- The holds of a batch that fits (billing.holds_fit), one statement per table,
-- rows in the loop's order (account, then place in the batch). PL/pgSQL, so that
-- the statement's plan is made once per session, not on every call.
CREATE OR REPLACE FUNCTION billing.reserve_fitting_holds(
  p_request_ids TEXT[], p_account_ids TEXT[], p_key_ids TEXT[], p_key_limits BIGINT[],
  p_models TEXT[], p_tiers TEXT[], p_sizes TEXT[], p_images INT[], p_expires_at TIMESTAMPTZ[],
  p_reasons TEXT[], p_topic TEXT, p_event_ids TEXT[], p_events BYTEA[])
RETURNS TABLE (item INT, outcome TEXT, unit_price_micros BIGINT, amount_micros BIGINT, hold_expires_at TIMESTAMPTZ, left_micros BIGINT)
LANGUAGE plpgsql SET enable_seqscan = off SET plan_cache_mode = force_generic_plan AS $$
BEGIN
  RETURN QUERY
  WITH batch AS MATERIALIZED (
    SELECT u.*, p.price_micros AS price, p.price_micros * u.images AS amount
      FROM unnest(p_request_ids, p_account_ids, p_key_ids, p_key_limits, p_models, p_tiers, p_sizes, p_images, p_expires_at, p_reasons, p_event_ids, p_events)
           WITH ORDINALITY AS u (request_id, account_id, key_id, key_limit, model, tier, size, images, expires_at, reason, event_id, event, position)
      JOIN billing.prices p ON p.model = u.model AND p.tier = u.tier
  ), before AS MATERIALIZED (
    -- What was left before each hold, as the loop reports it: of the key's limit
    -- for a limited key (after the key's earlier holds in the batch), else of the
    -- account (after all the account's earlier holds in the batch).
    SELECT batch.*,
           CASE WHEN batch.key_limit IS NULL
                THEN b.balance_micros - b.held_micros
                     - coalesce(sum(batch.amount) OVER (PARTITION BY batch.account_id ORDER BY batch.position ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0)
                ELSE batch.key_limit - k.captured_micros - k.held_micros
                     - coalesce(sum(batch.amount) OVER (PARTITION BY batch.key_id ORDER BY batch.position ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0)
           END AS left_before
      FROM batch
      JOIN billing.balances b ON b.account_id = batch.account_id
      LEFT JOIN billing.key_spend k ON k.key_id = batch.key_id AND batch.key_limit IS NOT NULL
  ), records AS (
    INSERT INTO billing.cost_records (request_id, account_id, key_id, model, size, tier, images_requested, unit_price_micros, reserved_micros, hold_expires_at)
      SELECT request_id, account_id, key_id, model, size, tier, images, price, amount, expires_at FROM batch ORDER BY account_id, position
  ), entries AS (
    INSERT INTO billing.ledger (kind, account_id, key_id, request_id, amount_micros, reason)
      SELECT 'reserve', account_id, key_id, request_id, amount, reason FROM batch ORDER BY account_id, position
  ), held AS (
    UPDATE billing.balances b SET held_micros = b.held_micros + need.total
      FROM (SELECT account_id, sum(amount)::BIGINT AS total FROM batch GROUP BY account_id) AS need
     WHERE b.account_id = need.account_id
  ), spent AS (
    INSERT INTO billing.key_spend (key_id, account_id, captured_micros, held_micros)
      SELECT key_id, min(account_id), 0, sum(amount)::BIGINT FROM batch GROUP BY key_id ORDER BY key_id
    ON CONFLICT (key_id) DO UPDATE SET held_micros = billing.key_spend.held_micros + excluded.held_micros
  ), events AS (
    INSERT INTO billing.outbox (topic, key, event_id, value)
      SELECT p_topic, account_id, event_id, event FROM batch ORDER BY account_id, position
  )
  SELECT before.position::INT, 'held'::TEXT, before.price, before.amount, before.expires_at, before.left_before::BIGINT FROM before;
END;
$$;
