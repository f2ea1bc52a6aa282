-- Every price change, by whom and why. Append-only like the ledger: a price a
-- request was charged at can always be explained later.
CREATE TABLE billing.price_changes (
  change_id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  model TEXT NOT NULL,
  tier TEXT NOT NULL CHECK (tier IN ('1K', '2K', '4K')),
  old_price_micros BIGINT CHECK (old_price_micros >= 0),
  new_price_micros BIGINT NOT NULL CHECK (new_price_micros >= 0),
  actor TEXT NOT NULL,
  note TEXT NOT NULL DEFAULT '',
  changed_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX price_changes_by_model ON billing.price_changes (model, change_id);

CREATE FUNCTION billing.refuse_history_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION '%.% is append-only: % is not allowed', TG_TABLE_SCHEMA, TG_TABLE_NAME, TG_OP;
END;
$$;
CREATE TRIGGER price_changes_no_update_or_delete BEFORE UPDATE OR DELETE ON billing.price_changes
  FOR EACH ROW EXECUTE FUNCTION billing.refuse_history_change();
CREATE TRIGGER price_changes_no_truncate BEFORE TRUNCATE ON billing.price_changes
  FOR EACH STATEMENT EXECUTE FUNCTION billing.refuse_history_change();

-- Keyset pages of an account's requests, newest first.
CREATE INDEX cost_records_account_pages ON billing.cost_records (account_id, created_at DESC, request_id DESC);
