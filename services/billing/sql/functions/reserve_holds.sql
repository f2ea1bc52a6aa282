-- Reservations of concurrent requests in one statement (reserve.ts gathers the
-- ones that arrive while a call is in flight): one round trip and one durable
-- commit for many holds. When the whole batch fits it makes the holds with one
-- statement per table (billing.reserve_fitting_holds); otherwise it runs
-- billing.reserve_holds_each, one billing.reserve_hold per element. Batches of 8
-- holds on one account, 400 of them in a transaction: 136-145 µs of PostgreSQL
-- per hold one by one, 62-73 µs at once (three runs each).
--
-- "Fits" means that running reserve_hold for each element in account order would
-- answer `held` for every one: new and distinct request ids, each price as the
-- caller expected, every account with a balances row and enough left for all its
-- holds together, and every limited key with one limit in the batch and enough
-- left under it for all its holds. Then the result is the same as the loop's:
-- the same records, ledger entries, outbox events (in the same order), balances,
-- key spend and answers, each hold's `left_micros` being what was left before it.
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
-- assumes an unnest gives (about 1 ms per call, more than the batch saves).
-- enable_seqscan off: a plan kept for the session is made without knowing the
-- tables' sizes to come, and one made while a table was small can read all of it
-- on every call as it grows; with this the plans read by the indexes.
-- reserve-batch.test.ts checks that no table is read in full.
CREATE OR REPLACE FUNCTION billing.reserve_holds(
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
