import { ErrorCode, type GeneratedImagesSchema, type Refusal } from "@orvado/proto";
import { refusal } from "@orvado/core";
import type { Db } from "@orvado/db";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { ImageStore } from "./storage/store.ts";
import { storedImageLink } from "./storage/signed-links.ts";

// A job's state or stored result, read back from generation.jobs and generation.images:
// the answer to GET /v1/images/generations/<request id> and to an idempotent retry
// whose original finished elsewhere (another replica, or before the retry arrived).

export type GeneratedImagesInit = MessageInitShape<typeof GeneratedImagesSchema>;

export type JobState =
  | { case: "running"; createdUnix: bigint; progress?: number; previewUrlPath?: string }
  | { case: "images"; value: GeneratedImagesInit }
  | { case: "failure"; value: Refusal };

export interface JobLookupDeps {
  db: Db;
  store: ImageStore;
  urlSigningSecret: string;
}

/**
 * How images come back: `url` always gives links (the lookup route); `as_requested`
 * gives b64_json when the original asked for it (an idempotent replay must answer
 * in the shape its body asked for).
 */
export type ResultShape = "url" | "as_requested";

interface JobRow {
  status: "running" | "succeeded" | "failed";
  response_format: string;
  error_code: string | null;
  error_message: string | null;
  should_retry: boolean | null;
  created_at: Date;
  finished_at: Date | null;
  progress: number | null;
  preview_image_id: string | null;
  preview_content_type: string | null;
  preview_expires_at: Date | null;
}

interface ImageRow {
  image_id: string;
  content_type: string;
  width: number;
  height: number;
  expires_at: Date;
  deleted_at: Date | null;
}

const unix = (date: Date) => BigInt(Math.floor(date.getTime() / 1000));

/**
 * An images answer's `created`: its job's finished_at, on the database's clock, in whole
 * seconds. The answer given when the job ends and every later one for the same request
 * (an Idempotency-Key retry, on any replica) are made from the same row, so they agree.
 */
export function answerCreatedUnix(finishedAt: Date): bigint {
  return unix(finishedAt);
}

/** Null when the request id has no job, or the job belongs to another account. */
export async function lookupJob(deps: JobLookupDeps, requestId: string, accountId: string, shape: ResultShape): Promise<JobState | null> {
  const { rows } = await deps.db.query<JobRow>(
    `SELECT job.status, job.response_format, job.error_code, job.error_message, job.should_retry, job.created_at, job.finished_at,
            job.progress, preview.image_id AS preview_image_id, preview.content_type AS preview_content_type, preview.expires_at AS preview_expires_at
       FROM generation.jobs job
       LEFT JOIN generation.previews preview ON preview.image_id = job.preview_image_id AND preview.deleted_at IS NULL AND preview.expires_at > now()
      WHERE job.request_id = $1 AND job.account_id = $2`,
    [requestId, accountId],
  );
  const job = rows[0];
  if (!job) return null;
  if (job.status === "running") return runningState(deps, job);
  if (job.status === "failed") return { case: "failure", value: storedFailure(job) };
  return storedImages(deps, requestId, job, shape === "as_requested" && job.response_format === "B64_JSON");
}

/** A running job, with its newest progress and preview link when its upstream reported them (job-progress.ts). */
function runningState(deps: JobLookupDeps, job: JobRow): JobState {
  const preview =
    job.preview_image_id && job.preview_content_type && job.preview_expires_at
      ? storedImageLink(job.preview_image_id, job.preview_expires_at, job.preview_content_type, deps.urlSigningSecret)
      : undefined;
  return {
    case: "running",
    createdUnix: unix(job.created_at),
    ...(job.progress !== null && { progress: job.progress }),
    ...(preview && { previewUrlPath: preview }),
  };
}

function storedFailure(job: JobRow): Refusal {
  const code = ErrorCode[(job.error_code ?? "").toUpperCase() as keyof typeof ErrorCode] ?? ErrorCode.ASYNC_IMAGE_FAILED;
  return refusal(code, job.error_message ?? "The job failed", { shouldRetry: job.should_retry ?? true }) as Refusal;
}

const expired = (): JobState => ({
  case: "failure",
  value: refusal(ErrorCode.LINK_EXPIRED, "The images of this request have expired; images are kept for a limited time") as Refusal,
});

async function storedImages(deps: JobLookupDeps, requestId: string, job: JobRow, asBase64: boolean): Promise<JobState> {
  const { rows } = await deps.db.query<ImageRow>(
    "SELECT image_id, content_type, width, height, expires_at, deleted_at FROM generation.images WHERE request_id = $1 ORDER BY position",
    [requestId],
  );
  const now = Date.now();
  // A link may never outlive its file: links are signed with the image's own expiry, not a new one.
  if (rows.some((image) => image.deleted_at !== null || image.expires_at.getTime() <= now)) return expired();
  const data = [];
  for (const image of rows) {
    const content = asBase64 ? await readBase64(deps.store, image.image_id) : signedPath(deps, image);
    if (content === null) return expired();
    data.push({ width: image.width, height: image.height, content });
  }
  return { case: "images", value: { createdUnix: answerCreatedUnix(job.finished_at ?? job.created_at), data } };
}

function signedPath(deps: JobLookupDeps, image: ImageRow) {
  return { case: "urlPath" as const, value: storedImageLink(image.image_id, image.expires_at, image.content_type, deps.urlSigningSecret) };
}

async function readBase64(store: ImageStore, imageId: string) {
  const file = await store.open(imageId);
  if (!file) return null;
  const chunks: Buffer[] = [];
  for await (const chunk of file.stream) chunks.push(Buffer.from(chunk));
  return { case: "b64Json" as const, value: Buffer.concat(chunks).toString("base64") };
}

export interface JobDetail {
  channel: string;
  status: string;
  quality: string;
  createdAtUnixMs: bigint;
  finishedAtUnixMs?: bigint;
  errorCode: string;
  errorMessage: string;
  imageBytes: bigint;
  /** The upstream's cause of a failure, for the operator; the public lookup never reads it. */
  failureDetail: string;
}

/** What the operator's request view adds to the state: where and how long it ran, how it failed. */
export async function lookupJobDetail(db: Db, requestId: string, accountId: string): Promise<JobDetail | null> {
  const { rows } = await db.query<{
    channel: string;
    status: string;
    quality: string | null;
    created_at: Date;
    finished_at: Date | null;
    error_code: string | null;
    error_message: string | null;
    failure_detail: string | null;
    image_bytes: string;
  }>(
    `SELECT job.channel, job.status, job.quality, job.created_at, job.finished_at, job.error_code, job.error_message, job.failure_detail,
            coalesce((SELECT sum(image.bytes) FROM generation.images image WHERE image.request_id = job.request_id), 0) AS image_bytes
       FROM generation.jobs job WHERE job.request_id = $1 AND job.account_id = $2`,
    [requestId, accountId],
  );
  const job = rows[0];
  if (!job) return null;
  return {
    channel: job.channel,
    status: job.status,
    quality: job.quality ?? "",
    createdAtUnixMs: BigInt(job.created_at.getTime()),
    finishedAtUnixMs: job.finished_at ? BigInt(job.finished_at.getTime()) : undefined,
    errorCode: job.error_code ?? "",
    errorMessage: job.error_message ?? "",
    imageBytes: BigInt(job.image_bytes),
    failureDetail: job.failure_detail ?? "",
  };
}
