import { billingEventColumns, emitBillingEvent, type BillingEventIds } from "@orvado/events";
import { codeText, SharedCalls, tierName } from "@orvado/core";
import { prepareStatement, type Db } from "@orvado/db";
import type { ErrorCode } from "@orvado/proto";
import type { JobSpec } from "./validate.ts";
import { releaseIdempotencyKey } from "./idempotency.ts";
import type { SlotHandOff } from "./capacity.ts";
import { FAILURE_DETAIL_MAX_CHARS } from "./channel-slots.ts";

// The job's rows and its billing event change in one transaction (the outbox):
// a job can never finish without billing hearing of it, nor the other way round.

export interface StoredImage {
  imageId: string;
  contentType: string;
  width: number;
  height: number;
  bytes: number;
  expiresAt: Date;
}

export interface JobStart {
  ids: BillingEventIds;
  spec: JobSpec;
  responseFormat: string;
  channel: string;
}

// The hot statements are prepared (parsed once per connection): their text is
// the same for any number of jobs, the jobs' values travel as arrays.
const INSERT_JOB_STARTS = prepareStatement(
  `INSERT INTO generation.jobs (request_id, account_id, key_id, model, size, tier, quality, images_requested, response_format, channel, status)
     SELECT request_id, account_id, key_id, model, size, tier, quality, images_requested, response_format, channel, 'running'
       FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::int[], $9::text[], $10::text[])
            AS start (request_id, account_id, key_id, model, size, tier, quality, images_requested, response_format, channel)`,
);

/** A job row's columns as arrays, one element per job (the statement takes the jobs' values as arrays). */
function startColumns(starts: JobStart[]): unknown[] {
  const column = <T>(pick: (start: JobStart) => T) => starts.map(pick);
  return [
    column((start) => start.ids.requestId),
    column((start) => start.ids.accountId),
    column((start) => start.ids.keyId),
    column((start) => start.spec.model.id),
    column((start) => start.spec.size.label),
    column((start) => tierName(start.spec.tier)),
    column((start) => start.spec.quality ?? null),
    column((start) => start.spec.n),
    column((start) => start.responseFormat),
    column((start) => start.channel),
  ];
}

/** Each job's 'running' row, written as it starts; those of jobs starting at once go in one INSERT (SharedCalls). */
export function jobStartWriter(db: Db): SharedCalls<JobStart, void> {
  return new SharedCalls<JobStart, void>(async (starts) => {
    await insertJobStarts(db, starts);
    return starts.map(() => undefined);
  });
}

async function insertJobStarts(db: Db, starts: JobStart[]): Promise<void> {
  // Not money, so the commit need not wait for the disk: if a database crash lost
  // a row, the job's success could not be recorded, it would fail, and billing
  // would release its hold. The job's outcome below is always durable.
  await db.query(INSERT_JOB_STARTS, startColumns(starts), { durable: false });
}

export interface JobSuccess {
  ids: BillingEventIds;
  images: StoredImage[];
  /** The job's channel slot, given back in the same statement (capacity.ts handOff). */
  slot: SlotHandOff | null;
  /** The job holds a concurrent-job lease (account-admission.ts), deleted in the same statement. */
  leased: boolean;
}

/**
 * Each job's images, its new status and its `completed` event, in one durable
 * statement; those of concurrent jobs in the same one (SharedCalls). The same
 * statement gives back each job's channel slot and concurrent-job lease, as
 * release_channel_slot does for a call that succeeded and releaseJobLease does:
 * what the answer waits for is one commit, not three round trips. Each job
 * resolves with the finished_at its row was given, the time its answer's
 * `created` is made from (job-lookup.ts answerCreatedUnix).
 */
export function jobSuccessWriter(db: Db): SharedCalls<JobSuccess, Date> {
  return new SharedCalls<JobSuccess, Date>(async (successes) => {
    const finishedAt = await insertJobSuccesses(db, successes);
    return successes.map(() => finishedAt);
  });
}

const RECORD_JOB_SUCCESSES = prepareStatement(
  // now() is the transaction's start, the same instant the function writes as each job's finished_at.
  "SELECT now() AS finished_at, generation.record_job_successes($1::text[], $2::text[], $3::int[], $4::text[], $5::int[], $6::int[], $7::int[], $8::timestamptz[], $9::text[], $10::int[], $11::text[], $12::text[], $13::text[], $14::text[], $15::text[], $16::text[], $17::bytea[])",
);

async function insertJobSuccesses(db: Db, successes: JobSuccess[]): Promise<Date> {
  const images = successes.flatMap(({ ids, images }) => images.map((image, position) => ({ requestId: ids.requestId, position, image })));
  const events = billingEventColumns(successes.map(({ ids, images }) => ({ ids, kind: { case: "completed" as const, value: { imagesDelivered: images.length } } })));
  const { rows } = await db.query<{ finished_at: Date }>(RECORD_JOB_SUCCESSES, [
    images.map((row) => row.image.imageId),
    images.map((row) => row.requestId),
    images.map((row) => row.position),
    images.map((row) => row.image.contentType),
    images.map((row) => row.image.width),
    images.map((row) => row.image.height),
    images.map((row) => row.image.bytes),
    images.map((row) => row.image.expiresAt),
    successes.map((success) => success.ids.requestId),
    successes.map((success) => success.images.length),
    successes.flatMap((success) => (success.slot ? [success.slot.slotId] : [])),
    [...new Set(successes.flatMap((success) => (success.slot ? [success.slot.channelKey] : [])))],
    successes.flatMap((success) => (success.leased ? [success.ids.requestId] : [])),
    // The `completed` events' outbox rows: topic, key, event id, value.
    ...events,
  ]);
  return rows[0]!.finished_at;
}

/**
 * The job failed: its row becomes `failed`, with its `failed` event in the same transaction.
 * `detail` is the upstream's cause, for the operator's request view only (JobDetail.failure_detail).
 */
export async function recordJobFailure(db: Db, ids: BillingEventIds, code: ErrorCode, message: string, shouldRetry: boolean, detail = ""): Promise<void> {
  await db.tx(async (q) => {
    const failed = await q.query(
      "UPDATE generation.jobs SET status = 'failed', error_code = $2, error_message = $3, should_retry = $4, failure_detail = $5, finished_at = now() WHERE request_id = $1 AND status = 'running'",
      [ids.requestId, codeText(code), message.slice(0, 1000), shouldRetry, detail === "" ? null : detail.slice(0, FAILURE_DETAIL_MAX_CHARS)],
    );
    // A success statement whose answer was lost may have committed: then this job is charged, and
    // neither its row nor billing may hear of a failure. The caller answers job_outcome_unknown.
    if (failed.rowCount !== 1) throw new Error(`job ${ids.requestId} is not running; its outcome may be recorded already`);
    // A failed request frees its Idempotency-Key in the same step, so a retry runs a new job (idempotency.ts).
    await releaseIdempotencyKey(q, ids.requestId);
    await emitBillingEvent(q, "generation", ids, { case: "failed", value: { code, reason: message.slice(0, 500) } });
  });
}

export interface ImageRow {
  content_type: string;
  expires_at: Date;
}

/** Null for an unknown image, and for one whose file the sweeper has deleted; a running job's preview (job-progress.ts) is an image too. */
export async function findImage(db: Db, imageId: string): Promise<ImageRow | null> {
  const result = await db.query<ImageRow>(
    `SELECT content_type, expires_at FROM generation.images WHERE image_id = $1 AND deleted_at IS NULL
     UNION ALL
     SELECT content_type, expires_at FROM generation.previews WHERE image_id = $1 AND deleted_at IS NULL`,
    [imageId],
  );
  return result.rows[0] ?? null;
}

/** Images and previews whose links have expired and whose files are still stored, oldest first. */
export async function findExpiredImages(db: Db, limit: number): Promise<string[]> {
  const result = await db.query<{ image_id: string }>(
    `SELECT image_id, expires_at FROM generation.images WHERE deleted_at IS NULL AND expires_at <= now()
     UNION ALL
     SELECT image_id, expires_at FROM generation.previews WHERE deleted_at IS NULL AND expires_at <= now()
     ORDER BY expires_at LIMIT $1`,
    [limit],
  );
  return result.rows.map((row) => row.image_id);
}

export async function markImageDeleted(db: Db, imageId: string): Promise<void> {
  await db.query("UPDATE generation.images SET deleted_at = now() WHERE image_id = $1 AND deleted_at IS NULL", [imageId]);
  await db.query("UPDATE generation.previews SET deleted_at = now() WHERE image_id = $1 AND deleted_at IS NULL", [imageId]);
}

/** After a failover the job row names the channel that is now running it. */
export async function recordJobChannel(db: Db, requestId: string, channel: string): Promise<void> {
  await db.query("UPDATE generation.jobs SET channel = $2 WHERE request_id = $1", [requestId, channel], { durable: false });
}
