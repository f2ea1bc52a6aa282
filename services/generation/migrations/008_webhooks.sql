-- Webhooks (docs/api.md#webhooks): an account's endpoints, the deliveries of its
-- jobs' outcomes (a durable outbox the sender claims from) and each delivery's attempts.
CREATE TABLE generation.webhook_endpoints (
  endpoint_id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL,
  url TEXT NOT NULL,
  events TEXT[] NOT NULL,
  -- whsec_ + base64: kept as it is because the sender must sign with it (HMAC), unlike an API key's hash.
  secret TEXT NOT NULL,
  created_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX webhook_endpoints_by_account ON generation.webhook_endpoints (account_id, created_at);

-- One row per (endpoint, request); its id is every attempt's webhook-id.
CREATE TABLE generation.webhook_deliveries (
  delivery_id TEXT PRIMARY KEY,
  endpoint_id TEXT NOT NULL REFERENCES generation.webhook_endpoints (endpoint_id) ON DELETE CASCADE,
  account_id TEXT NOT NULL,
  request_id TEXT NOT NULL,
  event_type TEXT NOT NULL,
  status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'succeeded', 'failed')),
  -- Failed attempts since the delivery was made or redelivered: the step of the retry schedule.
  failed_attempts INT NOT NULL DEFAULT 0,
  -- When a pending delivery is due; a claim moves it to the claim's expiry (a lease).
  next_attempt_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  -- The sender's claim: only the claim that sent an attempt may record its outcome.
  claim TEXT,
  created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  UNIQUE (endpoint_id, request_id)
);
CREATE INDEX webhook_deliveries_due ON generation.webhook_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_by_account ON generation.webhook_deliveries (account_id, created_at DESC);

CREATE TABLE generation.webhook_attempts (
  attempt_id BIGSERIAL PRIMARY KEY,
  delivery_id TEXT NOT NULL REFERENCES generation.webhook_deliveries (delivery_id) ON DELETE CASCADE,
  started_at TIMESTAMPTZ NOT NULL,
  duration_ms INT NOT NULL,
  status_code INT,
  error TEXT
);
CREATE INDEX webhook_attempts_by_delivery ON generation.webhook_attempts (delivery_id, started_at);

-- The trigger's function is defined by sql/functions/enqueue_webhook_deliveries.sql, which
-- replaces this copy at every start; it must exist before the triggers can name it.
CREATE OR REPLACE FUNCTION generation.enqueue_webhook_deliveries() RETURNS trigger
LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;

-- Only a job's change to a final status calls the function (the WHEN clause is checked without it).
CREATE TRIGGER jobs_finished_webhooks AFTER UPDATE OF status ON generation.jobs
  FOR EACH ROW WHEN (OLD.status = 'running' AND NEW.status IN ('succeeded', 'failed'))
  EXECUTE FUNCTION generation.enqueue_webhook_deliveries();
-- Rows written already final: record_job_successes's rows of jobs whose start rows an earlier version deferred.
CREATE TRIGGER jobs_inserted_finished_webhooks AFTER INSERT ON generation.jobs
  FOR EACH ROW WHEN (NEW.status IN ('succeeded', 'failed'))
  EXECUTE FUNCTION generation.enqueue_webhook_deliveries();
