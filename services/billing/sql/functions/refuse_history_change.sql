-- Price history is append-only: the triggers on billing.price_changes (migration
-- 002) call this on any UPDATE, DELETE or TRUNCATE, and it refuses.
CREATE OR REPLACE FUNCTION billing.refuse_history_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION '%.% is append-only: % is not allowed', TG_TABLE_SCHEMA, TG_TABLE_NAME, TG_OP;
END;
$$;
