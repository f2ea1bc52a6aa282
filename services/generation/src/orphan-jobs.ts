import type { Logger } from "@orvado/core";
import type { Db } from "@orvado/db";
import { ErrorCode } from "@orvado/proto";
import { emitBillingEvent } from "@orvado/events";
import { codeText } from "@orvado/core";
import { releaseIdempotencyKey } from "./idempotency.ts";
import { releaseJobLease } from "./account-admission.ts";

// A job whose generation process died (kill -9, a lost machine) stays 'running'
// in the table forever: nobody will finish it. Every job is bounded by the job
// time limit, so one older than that limit plus a grace period cannot be running
// anywhere. It is failed with its billing event, in one transaction, as a live
// job would fail: billing releases the hold (before its own sweeper would), and
// GET /v1/images/generations/<id> stops answering "running". Replicas may overlap:
// the status check makes each orphan fail once.

export const LOST_JOB_MESSAGE = "The job was lost when the service running it stopped; it was not charged";

const BATCH = 200;

interface OrphanRow {
  request_id: string;
  account_id: string;
  key_id: string;
}

export async function failOrphanedJobs(db: Db, olderThanMs: number): Promise<number> {
  const { rows } = await db.query<OrphanRow>(
    `SELECT request_id, account_id, key_id FROM generation.jobs
     WHERE status = 'running' AND created_at < now() - make_interval(secs => $1::double precision / 1000)
     ORDER BY created_at LIMIT ${BATCH}`,
    [olderThanMs],
  );
  let failed = 0;
  for (const row of rows) {
    const ids = { requestId: row.request_id, accountId: row.account_id, keyId: row.key_id };
    const changed = await db.tx(async (q) => {
      const updated = await q.query(
        `UPDATE generation.jobs SET status = 'failed', error_code = $2, error_message = $3, should_retry = true, finished_at = now()
         WHERE request_id = $1 AND status = 'running'`,
        [row.request_id, codeText(ErrorCode.ASYNC_IMAGE_FAILED), LOST_JOB_MESSAGE],
      );
      if (updated.rowCount !== 1) return false;
      await releaseIdempotencyKey(q, row.request_id);
      // Its concurrent-job lease has expired by now too; deleting it keeps the table small.
      await releaseJobLease(q, row.request_id);
      await emitBillingEvent(q, "generation", ids, { case: "failed", value: { code: ErrorCode.ASYNC_IMAGE_FAILED, reason: LOST_JOB_MESSAGE } });
      return true;
    });
    if (changed) failed += 1;
  }
  return failed;
}

export interface OrphanSweeperOptions {
  db: Db;
  logger: Logger;
  /** The job time limit plus a grace period for a job that timed out to record its failure. */
  olderThanMs: number;
  intervalMs: number;
  /** Pokes the outbox relay so the failed events leave at once. */
  onFailed: () => void;
}

export function startOrphanSweeper(options: OrphanSweeperOptions): () => Promise<void> {
  let running: Promise<unknown> = Promise.resolve();
  const sweep = () => {
    running = running
      .then(async () => {
        const failed = await failOrphanedJobs(options.db, options.olderThanMs);
        if (failed > 0) {
          options.logger.warn({ failed }, "failed jobs lost by a stopped generation process");
          options.onFailed();
        }
      })
      .catch((error) => options.logger.warn({ err: error }, "orphan job sweep failed"));
  };
  const timer = setInterval(sweep, options.intervalMs);
  timer.unref();
  return async () => {
    clearInterval(timer);
    await running;
  };
}
