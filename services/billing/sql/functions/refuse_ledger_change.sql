-- The ledger is append-only: the triggers on billing.ledger (migration 001) call
-- this on any UPDATE, DELETE or TRUNCATE, and it refuses.
CREATE OR REPLACE FUNCTION billing.refuse_ledger_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'billing.ledger is append-only: % is not allowed', TG_OP;
END;
$$;
