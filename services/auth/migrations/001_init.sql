-- Accounts and API keys. Auth owns this schema alone; other services learn about
-- accounts and keys only through AuthService. Console sessions will get their
-- own table in a later migration, keyed by account_id like api_keys.

CREATE TABLE auth.accounts (
  account_id    TEXT PRIMARY KEY,
  -- Stored normalised (trimmed, lower case) so the unique index is case-insensitive.
  email         TEXT NOT NULL UNIQUE CHECK (email = lower(btrim(email)) AND length(email) BETWEEN 3 AND 254),
  -- scrypt$N$r$p$salt$hash: the parameters travel with the hash so they can be raised later.
  password_hash TEXT NOT NULL CHECK (password_hash LIKE 'scrypt$%'),
  role          TEXT NOT NULL CHECK (role IN ('user', 'admin')),
  disabled      BOOLEAN NOT NULL DEFAULT false,
  created_at    TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE TABLE auth.api_keys (
  key_id        TEXT PRIMARY KEY,
  account_id    TEXT NOT NULL REFERENCES auth.accounts (account_id),
  name          TEXT NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
  -- SHA-256 of the whole secret, hex; the secret itself is never stored.
  secret_hash   TEXT NOT NULL UNIQUE CHECK (secret_hash ~ '^[0-9a-f]{64}$'),
  -- The first characters of the secret, safe to show in the console.
  prefix        TEXT NOT NULL,
  -- The key's own spending limit in micro-USD; NULL means the account balance only.
  limit_micros  BIGINT CHECK (limit_micros >= 0),
  expires_at    TIMESTAMPTZ,
  -- Model ids the key may use; empty means every model.
  models        TEXT[] NOT NULL DEFAULT '{}',
  created_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
  revoked_at    TIMESTAMPTZ,
  last_used_at  TIMESTAMPTZ
);

CREATE INDEX api_keys_by_account ON auth.api_keys (account_id);
