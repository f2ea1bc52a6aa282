-- Settlements of a batch of events in one statement (the consumer hands over the
-- batch it read from the stream): one round trip and one durable commit for many,
-- where one statement per event made the consumer a chain of commits that fell far
-- behind while requests were arriving (docs/performance.md, sixth session).
-- Each element is exactly billing.settle_request. They run in order of account,
-- as billing.reserve_holds takes them, so a settlement batch and a reservation
-- batch never wait on each other's account rows in a cycle; elements of one
-- account (and so of one request) keep the order they were read in.
-- Answers one row per element, numbered by its place in the arrays.
CREATE FUNCTION billing.settle_requests(p_request_ids TEXT[], p_kinds TEXT[], p_delivered INT[], p_release_reasons TEXT[])
RETURNS TABLE (item INT, result TEXT)
LANGUAGE plpgsql AS $$
DECLARE
  i INT;
BEGIN
  FOR i IN SELECT e.position
             FROM unnest(p_request_ids) WITH ORDINALITY AS e (request_id, position)
             LEFT JOIN billing.cost_records c ON c.request_id = e.request_id
            ORDER BY c.account_id NULLS LAST, e.position LOOP
    RETURN QUERY SELECT i, billing.settle_request(p_request_ids[i], p_kinds[i], p_delivered[i], p_release_reasons[i]);
  END LOOP;
END;
$$;
