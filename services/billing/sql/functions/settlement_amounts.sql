-- What a settlement moves: the images delivered (a completed event's count, at most
-- the images held for; none for a failure or an expiry) are captured at the held
-- unit price, from what is still held first; the rest of the hold is released.
-- SQL and immutable, so PostgreSQL inlines it into the statements that use it.
CREATE OR REPLACE FUNCTION billing.settlement_amounts(p_kind TEXT, p_delivered INT, p_images_requested INT, p_unit_price BIGINT, p_still_held BIGINT)
RETURNS TABLE (delivered INT, capture BIGINT, from_hold BIGINT, release BIGINT)
LANGUAGE sql IMMUTABLE AS $$
  SELECT d.delivered, d.capture, least(d.capture, p_still_held), p_still_held - least(d.capture, p_still_held)
    FROM (SELECT n.delivered, p_unit_price * n.delivered AS capture
            FROM (SELECT CASE WHEN p_kind = 'completed' THEN least(greatest(p_delivered, 0), p_images_requested) ELSE 0 END AS delivered) AS n) AS d
$$;
