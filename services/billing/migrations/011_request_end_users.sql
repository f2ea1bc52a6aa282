-- OpenAI's `user` field: the client's id for its own end user, one row per request
-- that carried one. Kept beside cost_records rather than in it: cost_records is a
-- projection rebuilt from the ledger (replay.ts), and this is a label, not money.
-- The console's usage list and CSV show it and filter by it (per account).
CREATE TABLE billing.request_end_users (
  request_id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL,
  end_user   TEXT NOT NULL CHECK (char_length(end_user) BETWEEN 1 AND 256),
  created_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX request_end_users_by_account ON billing.request_end_users (account_id, end_user, created_at);
