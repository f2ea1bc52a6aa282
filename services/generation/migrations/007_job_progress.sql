-- A running job's progress, for the lookup on any replica (docs/api.md#job-lookup):
-- the newest fraction its upstream reported and its newest preview render, written
-- at most about once a second per job (job-progress.ts).
ALTER TABLE generation.jobs
  ADD COLUMN progress REAL CHECK (progress >= 0 AND progress <= 1),
  ADD COLUMN preview_image_id TEXT;

-- Preview renders of running jobs, kept in the image store like images and for as long
-- as the job's links (GENERATION_URL_TTL_SECONDS); the file sweeper deletes them after.
CREATE TABLE generation.previews (
  image_id TEXT PRIMARY KEY,
  request_id TEXT NOT NULL,
  content_type TEXT NOT NULL,
  bytes INT NOT NULL,
  created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  expires_at TIMESTAMPTZ NOT NULL,
  deleted_at TIMESTAMPTZ
);
CREATE INDEX previews_to_sweep ON generation.previews (expires_at) WHERE deleted_at IS NULL;
