import { bufferView, SharedCalls, type Logger } from "@orvado/core";
import { prepareStatement, type Db } from "@orvado/db";
import type { UpstreamProgress } from "./providers/types.ts";
import type { ImageStore } from "./storage/store.ts";
import { markImageDeleted } from "./job-store.ts";

// A running job's progress in its row (generation.jobs progress, preview_image_id), so
// the job lookup shows it whichever replica answers (docs/api.md#job-lookup). Written at
// most once per PROGRESS_WRITE_INTERVAL_MS per job, and not in a job's first interval:
// upstreams report many steps a second, and thousands of jobs run at once, while a
// client polling the lookup every few seconds sees only the newest value anyway. A job
// that ends within the interval writes nothing no lookup could have seen. Only the
// preview current at a write is stored (in the image store, with the job's link TTL),
// and the one it replaces is deleted: a long job keeps one preview, not one a second.

/** At most one progress write per job per interval (see above). */
export const PROGRESS_WRITE_INTERVAL_MS = 1000;

interface ProgressWrite {
  requestId: string;
  fraction: number | null;
  preview: { imageId: string; contentType: string; bytes: number; expiresAt: Date } | null;
}

// The previews' rows and the jobs' columns in one statement, for every job writing at once.
const WRITE_PROGRESS = prepareStatement(
  `WITH progress AS (
     SELECT * FROM unnest($1::text[], $2::real[], $3::text[], $4::text[], $5::int[], $6::timestamptz[])
       AS p (request_id, fraction, image_id, content_type, bytes, expires_at)
   ), previews AS (
     INSERT INTO generation.previews (image_id, request_id, content_type, bytes, expires_at)
     SELECT image_id, request_id, content_type, bytes, expires_at FROM progress WHERE image_id IS NOT NULL
   )
   UPDATE generation.jobs job
      SET progress = coalesce(progress.fraction, job.progress), preview_image_id = coalesce(progress.image_id, job.preview_image_id)
     FROM progress
    WHERE job.request_id = progress.request_id AND job.status = 'running'`,
);

export interface JobProgressDeps {
  db: Db;
  store: ImageStore;
  urlTtlSeconds: number;
  logger: Logger;
}

/** One job's progress as it follows it: report() as the upstream tells, end() when the job ends. */
export interface FollowedProgress {
  report(progress: UpstreamProgress): void;
  end(): void;
}

export class JobProgressWriter {
  readonly #writes: SharedCalls<ProgressWrite, void>;

  constructor(private readonly deps: JobProgressDeps) {
    this.#writes = new SharedCalls<ProgressWrite, void>(async (writes) => {
      const column = <T>(pick: (write: ProgressWrite) => T) => writes.map(pick);
      // Not money: a row that lost its progress to a crash only shows less of it.
      await deps.db.query(
        WRITE_PROGRESS,
        [
          column((write) => write.requestId),
          column((write) => write.fraction),
          column((write) => write.preview?.imageId ?? null),
          column((write) => write.preview?.contentType ?? null),
          column((write) => write.preview?.bytes ?? null),
          column((write) => write.preview?.expiresAt ?? null),
        ],
        { durable: false },
      );
      return writes.map(() => undefined);
    });
  }

  follow(requestId: string): FollowedProgress {
    let fraction: number | undefined;
    let preview: UpstreamProgress["preview"];
    let changed = false;
    let ended = false;
    let writing = false;
    let timer: NodeJS.Timeout | undefined;
    let newestPreview: string | undefined;
    const flush = async () => {
      timer = undefined;
      if (ended || !changed || writing) return;
      const taken = { fraction, preview };
      changed = false;
      preview = undefined;
      writing = true;
      try {
        const stored = await this.#write(requestId, taken.fraction, taken.preview);
        if (stored) {
          // Only the newest preview is ever linked: the one it replaces is deleted now, not kept for the link TTL.
          if (newestPreview) await this.#deletePreview(newestPreview);
          newestPreview = stored;
        }
      } catch (error) {
        this.deps.logger.warn({ err: error, requestId }, "could not record the job's progress");
      } finally {
        writing = false;
        schedule();
      }
    };
    const schedule = () => {
      if (ended || !changed || timer) return;
      timer = setTimeout(flush, PROGRESS_WRITE_INTERVAL_MS);
      timer.unref();
    };
    return {
      report(progress) {
        if (ended) return;
        if (progress.fraction !== undefined && Number.isFinite(progress.fraction)) fraction = Math.min(1, Math.max(0, progress.fraction));
        if (progress.preview) preview = progress.preview;
        changed = true;
        schedule();
      },
      end() {
        ended = true;
        clearTimeout(timer);
      },
    };
  }

  /** Resolves with the stored preview's image id, if there was one. */
  async #write(requestId: string, fraction: number | undefined, preview: UpstreamProgress["preview"]): Promise<string | undefined> {
    let stored: ProgressWrite["preview"] = null;
    if (preview) {
      const expiresAt = new Date(Date.now() + this.deps.urlTtlSeconds * 1000);
      const bytes = bufferView(preview.bytes);
      const imageId = await this.deps.store.add(bytes, preview.mediaType, { expiresAt });
      stored = { imageId, contentType: preview.mediaType, bytes: bytes.length, expiresAt };
    }
    await this.#writes.call({ requestId, fraction: fraction ?? null, preview: stored });
    return stored?.imageId;
  }

  async #deletePreview(imageId: string): Promise<void> {
    // The file first, as the sweeper does: a crash between the two leaves a row to sweep again, never an orphan file.
    await this.deps.store.delete(imageId);
    await markImageDeleted(this.deps.db, imageId);
  }
}
