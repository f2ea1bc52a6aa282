-- Fair-share limits (docs/api.md, "Limits"). Auth only stores them; generation enforces
-- them, in its own tables, for every edge and generation replica alike.
-- max_concurrent_jobs: NULL means the generation service's default, 0 means no limit.
-- requests_per_minute: NULL means no limit.
ALTER TABLE auth.accounts
  ADD COLUMN max_concurrent_jobs INT CHECK (max_concurrent_jobs BETWEEN 0 AND 100000),
  ADD COLUMN requests_per_minute INT CHECK (requests_per_minute BETWEEN 1 AND 1000000);

ALTER TABLE auth.api_keys
  ADD COLUMN requests_per_minute INT CHECK (requests_per_minute BETWEEN 1 AND 1000000);
