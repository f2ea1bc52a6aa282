-- Console sessions and the sign-in failure log that rate limiting reads.

CREATE TABLE auth.sessions (
  -- SHA-256 of the opaque session token, hex; the token itself is never stored.
  token_hash    TEXT PRIMARY KEY CHECK (token_hash ~ '^[0-9a-f]{64}$'),
  account_id    TEXT NOT NULL REFERENCES auth.accounts (account_id),
  created_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
  -- Idle expiry counts from here; written at most once a minute per session.
  last_seen_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
  -- The absolute end, whatever the activity.
  expires_at    TIMESTAMPTZ NOT NULL
);

CREATE INDEX sessions_by_account ON auth.sessions (account_id);

-- One row per failed sign-in, in Postgres so that every auth replica (and so every
-- edge) counts the same failures. scope is 'email:<normalised email>' or 'ip:<address>'.
CREATE TABLE auth.sign_in_failures (
  scope         TEXT NOT NULL,
  failed_at     TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE INDEX sign_in_failures_by_scope ON auth.sign_in_failures (scope, failed_at);
