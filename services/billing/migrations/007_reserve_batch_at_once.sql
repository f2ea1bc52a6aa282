-- billing.reserve_holds makes a batch's holds with one statement per table when
-- the whole batch fits, instead of running billing.reserve_hold for each element
-- (about ten statements each, one balances and one key_spend update per hold).
-- Batches of 8 holds on one account, 400 of them in a transaction: 136-145 µs
-- of PostgreSQL per hold that way, 62-73 µs with the statements below (three
-- runs each; docs/performance.md, eighth session).
--
-- "Fits" means that running reserve_hold for each element in account order would
-- answer `held` for every one: new and distinct request ids, each price as the
-- caller expected, every account with a balances row and enough left for all its
-- holds together, and every limited key with one limit in the batch and enough
-- left under it for all its holds. Then the result is the same as the loop's:
-- the same records, ledger entries, outbox events (in the same order), balances,
-- key spend and answers, each hold's `left_micros` being what was left before it.
-- Any other batch runs the loop of migration 004 unchanged, renamed
-- billing.reserve_holds_each.
--
-- Locks: the account rows first, all of them in account order (as the loop
-- takes them), then the limited keys' rows in key order. A key belongs to one
-- account, and every statement that locks a key_spend row holds its account's
-- row already, so key rows add no lock cycle.
--
-- Plans: every row these functions read is found by its primary key, and they
-- run with two settings of their own. plan_cache_mode force_generic_plan: PL/pgSQL
-- then plans each statement once per session; otherwise PostgreSQL keeps planning
-- each call for its own values, because a batch is smaller than the 100 rows it
-- assumes an unnest gives (about 1 ms per call for the statement below, more than
-- the batch saves). enable_seqscan off: a plan kept for the session is made
-- without knowing the tables' sizes to come, and one made while a table was small
-- can read all of it on every call as it grows (migration 006); with this the
-- plans read by the indexes. reserve-batch.test.ts checks that no table is read
-- in full.
ALTER FUNCTION billing.reserve_holds(TEXT[], TEXT[], TEXT[], BIGINT[], TEXT[], TEXT[], TEXT[], INT[], TIMESTAMPTZ[], BIGINT[], TEXT[], TEXT, TEXT[], BYTEA[])
  RENAME TO reserve_holds_each;

CREATE FUNCTION billing.reserve_holds(
  p_request_ids TEXT[], p_account_ids TEXT[], p_key_ids TEXT[], p_key_limits BIGINT[],
  p_models TEXT[], p_tiers TEXT[], p_sizes TEXT[], p_images INT[], p_expires_at TIMESTAMPTZ[],
  p_expected_prices BIGINT[], p_reasons TEXT[], p_topic TEXT, p_event_ids TEXT[], p_events BYTEA[])
RETURNS TABLE (item INT, outcome TEXT, unit_price_micros BIGINT, amount_micros BIGINT, hold_expires_at TIMESTAMPTZ, left_micros BIGINT)
LANGUAGE plpgsql SET enable_seqscan = off SET plan_cache_mode = force_generic_plan AS $$
BEGIN
  PERFORM 1 FROM billing.balances b WHERE b.account_id = ANY(p_account_ids) ORDER BY b.account_id FOR UPDATE;
  IF billing.holds_fit(p_request_ids, p_account_ids, p_key_ids, p_key_limits, p_models, p_tiers, p_images, p_expected_prices) THEN
    RETURN QUERY SELECT * FROM billing.reserve_fitting_holds(p_request_ids, p_account_ids, p_key_ids, p_key_limits, p_models, p_tiers,
      p_sizes, p_images, p_expires_at, p_reasons, p_topic, p_event_ids, p_events);
  ELSE
    RETURN QUERY SELECT * FROM billing.reserve_holds_each(p_request_ids, p_account_ids, p_key_ids, p_key_limits, p_models, p_tiers,
      p_sizes, p_images, p_expires_at, p_expected_prices, p_reasons, p_topic, p_event_ids, p_events);
  END IF;
END;
$$;

-- True when every element would be `held` by the loop (see above). Called with
-- the batch's account rows locked; locks the limited keys' rows (making any that
-- are missing, as reserve_hold does) before reading them.
CREATE FUNCTION billing.holds_fit(
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

-- The holds of a batch that fits (billing.holds_fit), one statement per table,
-- rows in the loop's order (account, then place in the batch). PL/pgSQL, so that
-- the statement's plan is made once per session, not on every call.
CREATE FUNCTION billing.reserve_fitting_holds(
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
