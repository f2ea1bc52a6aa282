-- Settlements of a batch of events in one statement (the consumer hands over the
-- batch it read from the stream): one round trip and one durable commit for many.
-- Each element is billing.settle_request, the one implementation of a
-- settlement, so a batch tolerates duplicates and any order exactly as events
-- settled one by one do.
--
-- They run in order of the account each event names, as billing.reserve_holds
-- takes them, so a settlement batch and a reservation batch never wait on each
-- other's account rows in a cycle; elements of one account (and so of one
-- request) keep the order they were read in. The account comes with the event
-- rather than from a join on cost_records: PL/pgSQL keeps the plan it makes on a
-- session's first calls, and a join planned while cost_records was small read the
-- whole table on every batch as it grew. The account only orders the batch; what
-- a settlement charges comes from its cost record, read under its lock. An
-- account that is wrong can at worst cost a deadlock, which fails the batch, and
-- the consumer then settles its events one at a time.
-- Answers one row per element, numbered by its place in the arrays.
CREATE OR REPLACE FUNCTION billing.settle_requests(p_request_ids TEXT[], p_account_ids TEXT[], p_kinds TEXT[], p_delivered INT[], p_release_reasons TEXT[])
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
