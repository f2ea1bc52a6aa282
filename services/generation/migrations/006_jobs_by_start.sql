-- The operator's channel statistics read the jobs of a recent window (channel-stats.ts).
CREATE INDEX jobs_by_start ON generation.jobs (created_at);
