import type { Logger } from "@orvado/core";
import type { Db } from "@orvado/db";
import { findExpiredImages, markImageDeleted } from "./job-store.ts";
import { pruneIdempotencyKeys } from "./idempotency.ts";
import type { ImageStore } from "./storage/store.ts";

// Images are not long-term hosting (docs/api.md#image-links): once an image's link has expired
// its file is deleted from the store (disk or bucket) and its row marked, so the
// job lookup answers 410 instead of a link to nothing. Expired Idempotency-Keys
// are pruned on the same beat. Deleting is idempotent, so replicas may overlap.

const BATCH = 200;
/** How often each replica sweeps: links live for hours, so a minute late costs a minute of storage. */
export const FILE_SWEEP_INTERVAL_MS = 60_000;

export interface SweepResult {
  imagesDeleted: number;
  /** Space the store freed as a whole (segment files) once everything in it had expired. */
  unitsReclaimed: number;
  keysPruned: number;
}

export async function sweepExpiredFiles(deps: { db: Db; store: ImageStore; logger: Logger }): Promise<SweepResult> {
  let imagesDeleted = 0;
  for (;;) {
    const imageIds = await findExpiredImages(deps.db, BATCH);
    for (const imageId of imageIds) {
      // The file goes first: a crash between the two steps leaves a row to sweep again, never an orphan file.
      await deps.store.delete(imageId);
      await markImageDeleted(deps.db, imageId);
    }
    imagesDeleted += imageIds.length;
    if (imageIds.length < BATCH) break;
  }
  const unitsReclaimed = (await deps.store.reclaim?.()) ?? 0;
  const keysPruned = await pruneIdempotencyKeys(deps.db);
  if (imagesDeleted + unitsReclaimed + keysPruned > 0) deps.logger.info({ imagesDeleted, unitsReclaimed, keysPruned }, "swept expired images and idempotency keys");
  return { imagesDeleted, unitsReclaimed, keysPruned };
}

/** Sweeps every intervalMs until the returned stop function is called; stop waits for a sweep in progress. */
export function startFileSweeper(deps: { db: Db; store: ImageStore; logger: Logger }, intervalMs: number): () => Promise<void> {
  let running: Promise<unknown> = Promise.resolve();
  const timer = setInterval(() => {
    running = running.then(() => sweepExpiredFiles(deps)).catch((error) => deps.logger.warn({ err: error }, "file sweep failed"));
  }, intervalMs);
  timer.unref();
  return async () => {
    clearInterval(timer);
    await running;
  };
}
