-- Fair share (docs/api.md, "Limits"): an account's concurrent jobs and the
-- requests per minute of an account and of a key. The state is here, not in a
-- process, so every edge and generation replica enforces one limit.

-- One row per account, locked by admit_job so that the checks and the lease or
-- count they lead to are one step for that account, on every replica.
CREATE TABLE generation.account_admission (
  account_id TEXT PRIMARY KEY
);

-- One row per admitted job that counts against its account's concurrent-job
-- limit. The job deletes it when it ends; expires_at (the job time limit plus
-- the orphan grace) bounds a lease whose process died before it could.
CREATE TABLE generation.job_leases (
  request_id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL,
  expires_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX job_leases_by_account ON generation.job_leases (account_id, expires_at);

-- Requests admitted per subject ('account:<id>' or 'key:<id>') in fixed one-minute windows.
CREATE TABLE generation.request_windows (
  subject TEXT NOT NULL,
  window_start TIMESTAMPTZ NOT NULL,
  requests INT NOT NULL,
  PRIMARY KEY (subject, window_start)
);

-- The functions that use these tables are in sql/functions/admit_job.sql (one file each, applied at every start).
