-- Idempotency-Key: one row per (account, key) while the key is live (24 h by default).
-- The primary key is what makes concurrent retries safe across edge and generation
-- replicas: exactly one insert wins, every other attempt reads the winner's request id.
CREATE TABLE generation.idempotency_keys (
  account_id TEXT NOT NULL,
  idempotency_key TEXT NOT NULL,
  -- SHA-256 of the canonical request fields; a different body under the same key is a 409.
  body_hash TEXT NOT NULL,
  request_id TEXT NOT NULL UNIQUE,
  created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  expires_at TIMESTAMPTZ NOT NULL,
  PRIMARY KEY (account_id, idempotency_key)
);
CREATE INDEX idempotency_keys_expiry ON generation.idempotency_keys (expires_at);

-- The job lookup answers a failure with the same retry hint the caller saw.
ALTER TABLE generation.jobs ADD COLUMN should_retry BOOLEAN;

-- The file sweeper deletes image files once their links have expired and marks the row.
ALTER TABLE generation.images ADD COLUMN deleted_at TIMESTAMPTZ;
CREATE INDEX images_to_sweep ON generation.images (expires_at) WHERE deleted_at IS NULL;
