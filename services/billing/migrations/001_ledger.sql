-- The price table: model x tier, flat per image. Loaded from the operator's file at start.
CREATE TABLE billing.prices (
  model TEXT NOT NULL,
  tier TEXT NOT NULL CHECK (tier IN ('1K', '2K', '4K')),
  price_micros BIGINT NOT NULL CHECK (price_micros >= 0),
  PRIMARY KEY (model, tier)
);

-- The ledger: the only record of money. Append-only, enforced below.
CREATE TABLE billing.ledger (
  entry_id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  kind TEXT NOT NULL CHECK (kind IN ('top_up', 'reserve', 'capture', 'release', 'adjustment')),
  account_id TEXT NOT NULL,
  key_id TEXT,
  -- The request id for reserve/capture/release; the top-up id for top-ups.
  request_id TEXT NOT NULL,
  -- Always positive; the kind says which way it moves. Adjustments may be signed.
  amount_micros BIGINT NOT NULL CHECK (kind = 'adjustment' OR amount_micros >= 0),
  reason TEXT NOT NULL DEFAULT '',
  created_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
-- Each request is reserved, captured and released at most once: this is what
-- makes redelivered and duplicated events harmless.
CREATE UNIQUE INDEX ledger_once_per_request ON billing.ledger (request_id, kind);
CREATE INDEX ledger_by_account ON billing.ledger (account_id, entry_id);

CREATE FUNCTION billing.refuse_ledger_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'billing.ledger is append-only: % is not allowed', TG_OP;
END;
$$;
CREATE TRIGGER ledger_no_update_or_delete BEFORE UPDATE OR DELETE ON billing.ledger
  FOR EACH ROW EXECUTE FUNCTION billing.refuse_ledger_change();
CREATE TRIGGER ledger_no_truncate BEFORE TRUNCATE ON billing.ledger
  FOR EACH STATEMENT EXECUTE FUNCTION billing.refuse_ledger_change();

-- Projections of the ledger, kept in the same transaction as each entry.
CREATE TABLE billing.balances (
  account_id TEXT PRIMARY KEY,
  -- top-ups + adjustments - captures
  balance_micros BIGINT NOT NULL DEFAULT 0,
  -- reserved and not yet captured or released
  held_micros BIGINT NOT NULL DEFAULT 0 CHECK (held_micros >= 0)
);

CREATE TABLE billing.key_spend (
  key_id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL,
  captured_micros BIGINT NOT NULL DEFAULT 0,
  held_micros BIGINT NOT NULL DEFAULT 0 CHECK (held_micros >= 0)
);

-- One row per reserved request: the hold and how it was settled.
CREATE TABLE billing.cost_records (
  request_id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL,
  key_id TEXT NOT NULL,
  model TEXT NOT NULL,
  size TEXT NOT NULL,
  tier TEXT NOT NULL,
  images_requested INT NOT NULL,
  unit_price_micros BIGINT NOT NULL,
  reserved_micros BIGINT NOT NULL,
  images_delivered INT NOT NULL DEFAULT 0,
  captured_micros BIGINT NOT NULL DEFAULT 0,
  released_micros BIGINT NOT NULL DEFAULT 0,
  -- null while held; then completed | failed | expired ('expired' may still be followed by a late completed)
  settled_by TEXT CHECK (settled_by IN ('completed', 'failed', 'expired')),
  created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  settled_at TIMESTAMPTZ,
  hold_expires_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX cost_records_open_holds ON billing.cost_records (hold_expires_at) WHERE settled_by IS NULL;
CREATE INDEX cost_records_by_account ON billing.cost_records (account_id, created_at);
