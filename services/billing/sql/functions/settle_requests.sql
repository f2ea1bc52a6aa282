-- Settlements of a batch of events in one statement (the consumer hands over the
-- batch it read from the stream): one round trip and one durable commit for many.
-- When every element settles an open hold (billing.settlements_open) it writes
-- them with one statement per table (billing.settle_open_holds); otherwise it
-- runs billing.settle_requests_each, one billing.settle_request per element.
-- Batches of 8 on one account, 400 in a transaction: 109-119 µs per settlement
-- one by one, 63-68 µs at once (three runs each).
--
-- "Open" means: each request of the batch named once, its cost record found and
-- not settled yet, its account's balances row and its key's key_spend row there
-- (a hold makes both). Then settle_request would answer `applied` for each, and
-- settle_open_holds writes what it would: the same ledger entries (capture, then
-- release, each element in the loop's order: the events' accounts, then place in
-- the batch), balances, key spend and cost records, and `applied` for each.
--
-- Locks: the batch's cost records in the loop's order, then the account rows in
-- account order (as reservations take them), then the key rows, which are only
-- ever locked by a transaction holding their account's row. One consumer settles
-- at a time; the hold sweeper settles one request per transaction, holding at
-- most one record and its account's row, so it cannot close a cycle with a batch.
--
-- As billing.reserve_holds, these run with plan_cache_mode force_generic_plan and
-- enable_seqscan off (settle-batch.test.ts).
CREATE OR REPLACE FUNCTION billing.settle_requests(p_request_ids TEXT[], p_account_ids TEXT[], p_kinds TEXT[], p_delivered INT[], p_release_reasons TEXT[])
RETURNS TABLE (item INT, result TEXT)
LANGUAGE plpgsql SET enable_seqscan = off SET plan_cache_mode = force_generic_plan AS $$
BEGIN
  IF billing.settlements_open(p_request_ids, p_account_ids) THEN
    RETURN QUERY SELECT * FROM billing.settle_open_holds(p_request_ids, p_account_ids, p_kinds, p_delivered, p_release_reasons);
  ELSE
    RETURN QUERY SELECT * FROM billing.settle_requests_each(p_request_ids, p_account_ids, p_kinds, p_delivered, p_release_reasons);
  END IF;
END;
$$;
