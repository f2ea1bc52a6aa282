-- billing.settle_requests takes each event's account with it, and orders the
-- batch by those, instead of looking every request's account up in
-- cost_records. That lookup was a join, and PL/pgSQL keeps the plan it makes
-- on a session's first calls: made while cost_records was small, the plan was
-- a hash join over a full scan of it, kept as the table grew, so every batch
-- read the whole table (974 rows per request at one connection after 2,000
-- requests; docs/performance.md, seventh session). The account only orders the
-- batch, so that it takes account rows in the order reserve_holds does (no lock
-- cycle between them); what a settlement charges still comes from its cost
-- record, read under its lock by billing.settle_request. An account that is
-- wrong can at worst cost a deadlock, which fails the batch, and the consumer
-- then settles its events one at a time.
-- An older billing process that still calls the four-argument form during an
-- upgrade fails its batch the same way and settles one event at a time.
DROP FUNCTION IF EXISTS billing.settle_requests(TEXT[], TEXT[], INT[], TEXT[]);

CREATE FUNCTION billing.settle_requests(p_request_ids TEXT[], p_account_ids TEXT[], p_kinds TEXT[], p_delivered INT[], p_release_reasons TEXT[])
RETURNS TABLE (item INT, result TEXT)
LANGUAGE plpgsql AS $$
DECLARE
  i INT;
BEGIN
  FOR i IN SELECT e.position FROM unnest(p_account_ids) WITH ORDINALITY AS e (account_id, position) ORDER BY e.account_id, e.position LOOP
    RETURN QUERY SELECT i, billing.settle_request(p_request_ids[i], p_kinds[i], p_delivered[i], p_release_reasons[i]);
  END LOOP;
END;
$$;
