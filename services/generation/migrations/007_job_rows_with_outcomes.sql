-- record_job_successes also writes the whole row of a job that ended before its
-- start row was written (sql/functions/record_job_successes.sql, job-starts.ts):
-- the function gained those columns as parameters, so its older signature goes.
DROP FUNCTION IF EXISTS generation.record_job_successes(
  TEXT[], TEXT[], INT[], TEXT[], INT[], INT[], INT[], TIMESTAMPTZ[], TEXT[], INT[],
  TEXT[], TEXT[], TEXT[], TEXT[], TEXT[], TEXT[], BYTEA[]
);
