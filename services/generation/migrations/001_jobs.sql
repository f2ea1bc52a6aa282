-- One row per generation job. States: running -> succeeded | failed.
CREATE TABLE generation.jobs (
  request_id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL,
  key_id TEXT NOT NULL,
  model TEXT NOT NULL,
  size TEXT NOT NULL,
  tier TEXT NOT NULL,
  quality TEXT,
  images_requested INT NOT NULL,
  response_format TEXT NOT NULL,
  channel TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('running', 'succeeded', 'failed')),
  images_delivered INT NOT NULL DEFAULT 0,
  error_code TEXT,
  error_message TEXT,
  created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  finished_at TIMESTAMPTZ
);
CREATE INDEX jobs_running ON generation.jobs (created_at) WHERE status = 'running';

CREATE TABLE generation.images (
  image_id TEXT PRIMARY KEY,
  request_id TEXT NOT NULL REFERENCES generation.jobs (request_id),
  position INT NOT NULL,
  content_type TEXT NOT NULL,
  width INT NOT NULL,
  height INT NOT NULL,
  bytes INT NOT NULL,
  created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  expires_at TIMESTAMPTZ NOT NULL,
  UNIQUE (request_id, position)
);
