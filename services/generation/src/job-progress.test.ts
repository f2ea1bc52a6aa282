import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger, newRequestId } from "@orvado/core";
import type { Db } from "@orvado/db";
import { JobProgressWriter, PROGRESS_WRITE_INTERVAL_MS } from "./job-progress.ts";
import { lookupJob } from "./job-lookup.ts";
import { findImage } from "./job-store.ts";
import { sweepExpiredFiles } from "./file-sweeper.ts";
import { SegmentImageStore } from "./storage/segment-store.ts";
import { openGenerationTestDb } from "./test-support.ts";

// A running job's progress in PostgreSQL (docs/api.md#job-lookup), so the lookup answers
// the same on every replica: the writer against a real database (PostgreSQL when
// TEST_DATABASE_URL is set) and the segment image store on disk.

const SECRET = "progress-test-link-secret";
const ACCOUNT = "acct_progress";
const logger = createLogger("test", "silent");
let database: Awaited<ReturnType<typeof openGenerationTestDb>>;
let db: Db;
let root: string;
let store: SegmentImageStore;

beforeAll(async () => {
  database = await openGenerationTestDb();
  db = database.db;
  root = await mkdtemp(join(tmpdir(), "orvado-progress-"));
  store = new SegmentImageStore(root);
});
afterAll(async () => {
  await store?.close();
  await database?.close();
  await rm(root, { recursive: true, force: true });
});

async function runningJob(): Promise<string> {
  const requestId = newRequestId();
  await db.query(
    `INSERT INTO generation.jobs (request_id, account_id, key_id, model, size, tier, images_requested, response_format, channel, status)
     VALUES ($1, $2, 'key_progress', 'beta', '1024x1024', '1K', 1, 'URL', 'sandbox', 'running')`,
    [requestId, ACCOUNT],
  );
  return requestId;
}

const row = async (requestId: string) =>
  (await db.query<{ progress: number | null; preview_image_id: string | null }>("SELECT progress, preview_image_id FROM generation.jobs WHERE request_id = $1", [requestId])).rows[0]!;
const previewCount = async (requestId: string) => Number((await db.query<{ count: string }>("SELECT count(*) FROM generation.previews WHERE request_id = $1", [requestId])).rows[0]!.count);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const png = (shade: number) => ({ bytes: new Uint8Array([137, 80, 78, 71, shade]), mediaType: "image/png" as const });

describe("JobProgressWriter", () => {
  it("writes the newest progress at most once an interval, not in the first one, and the lookup shows it with a link to the newest preview", async () => {
    const writer = new JobProgressWriter({ db, store, urlTtlSeconds: 3600, logger });
    const requestId = await runningJob();
    const followed = writer.follow(requestId);
    for (let step = 1; step <= 50; step++) followed.report({ fraction: step / 100, ...(step % 10 === 0 && { preview: png(step) }) });
    expect(await row(requestId)).toEqual({ progress: null, preview_image_id: null });
    await sleep(PROGRESS_WRITE_INTERVAL_MS + 300);
    const written = await row(requestId);
    expect(written.progress).toBeCloseTo(0.5, 5);
    // Only the preview current at the write is stored.
    expect(await previewCount(requestId)).toBe(1);
    expect(await findImage(db, written.preview_image_id!)).toMatchObject({ content_type: "image/png" });
    const state = await lookupJob({ db, store, urlSigningSecret: SECRET }, requestId, ACCOUNT, "url");
    expect(state).toMatchObject({ case: "running", progress: expect.closeTo(0.5, 5), previewUrlPath: expect.stringMatching(/^\/v1\/files\/img_[A-Za-z0-9_-]+\.png\?expires=\d+&sig=/) });
    followed.report({ fraction: 0.9 });
    await sleep(PROGRESS_WRITE_INTERVAL_MS + 300);
    expect(await row(requestId)).toEqual({ progress: expect.closeTo(0.9, 5), preview_image_id: written.preview_image_id });
    // A newer preview replaces it: the older one's file and link are gone.
    followed.report({ preview: png(99) });
    await sleep(PROGRESS_WRITE_INTERVAL_MS + 300);
    const replaced = await row(requestId);
    expect(replaced.preview_image_id).not.toBe(written.preview_image_id);
    expect(await findImage(db, written.preview_image_id!)).toBeNull();
    expect(await store.open(written.preview_image_id!)).toBeNull();
    expect(await findImage(db, replaced.preview_image_id!)).toMatchObject({ content_type: "image/png" });
    followed.end();
  });

  it("writes nothing for a job that ended within the interval, nor after a job ended", async () => {
    const writer = new JobProgressWriter({ db, store, urlTtlSeconds: 3600, logger });
    const requestId = await runningJob();
    const followed = writer.follow(requestId);
    followed.report({ fraction: 0.4, preview: png(1) });
    followed.end();
    followed.report({ fraction: 0.8 });
    await sleep(PROGRESS_WRITE_INTERVAL_MS + 300);
    expect(await row(requestId)).toEqual({ progress: null, preview_image_id: null });
    expect(await previewCount(requestId)).toBe(0);
  });

  it("leaves a finished job's row alone, and the sweeper deletes a preview once its link expired", async () => {
    const writer = new JobProgressWriter({ db, store, urlTtlSeconds: 0, logger });
    const requestId = await runningJob();
    const followed = writer.follow(requestId);
    followed.report({ fraction: 0.3, preview: png(2) });
    await sleep(PROGRESS_WRITE_INTERVAL_MS + 300);
    followed.end();
    const { preview_image_id: previewId } = await row(requestId);
    expect(previewId).not.toBeNull();
    await db.query("UPDATE generation.jobs SET status = 'failed', finished_at = now() WHERE request_id = $1", [requestId]);
    // A report that arrives as the job ends elsewhere (another replica's row) does not touch it.
    const late = writer.follow(requestId);
    late.report({ fraction: 0.95 });
    await sleep(PROGRESS_WRITE_INTERVAL_MS + 300);
    late.end();
    expect((await row(requestId)).progress).toBeCloseTo(0.3, 5);
    await sweepExpiredFiles({ db, store, logger });
    expect(await findImage(db, previewId!)).toBeNull();
    expect(await store.open(previewId!)).toBeNull();
  });
});
