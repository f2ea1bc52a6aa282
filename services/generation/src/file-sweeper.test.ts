import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ErrorCode } from "@orvado/proto";
import { createLogger, newRequestId } from "@orvado/core";
import { migrate, openDb, type Db } from "@orvado/db";
import { freshDatabase, type FreshDatabase } from "@orvado/testkit";
import { startFileSweeper, sweepExpiredFiles } from "./file-sweeper.ts";
import { findImage } from "./job-store.ts";
import { lookupJob } from "./job-lookup.ts";
import { SegmentImageStore } from "./storage/segment-store.ts";
import { S3ImageStore } from "./storage/s3-store.ts";
import { startLocalS3 } from "./storage/s3rver-for-tests.ts";
import type { ImageStore } from "./storage/store.ts";

const logger = createLogger("test", "silent");
const ACCOUNT = "acct_sweeper";
let database: FreshDatabase;
let db: Db;
let root: string;
let s3: Awaited<ReturnType<typeof startLocalS3>>;
const stores: Array<[string, () => ImageStore]> = [
  ["local disk", () => new SegmentImageStore(root)],
  ["an S3 bucket (s3rver)", () => new S3ImageStore(s3.config)],
];

/** A finished job with one image whose link expires `expiresInSeconds` from now (negative: already expired). */
async function finishedJob(store: ImageStore, expiresInSeconds: number): Promise<{ requestId: string; imageId: string }> {
  const requestId = newRequestId();
  const imageId = await store.add(Buffer.from("png"), "image/png", { expiresAt: new Date(Date.now() + expiresInSeconds * 1000) });
  await db.query(
    `INSERT INTO generation.jobs (request_id, account_id, key_id, model, size, tier, images_requested, response_format, channel, status, images_delivered, finished_at)
     VALUES ($1, $2, 'key_sweeper', 'beta', '1024x1024', '1K', 1, 'URL', 'sandbox', 'succeeded', 1, now())`,
    [requestId, ACCOUNT],
  );
  await db.query(
    `INSERT INTO generation.images (image_id, request_id, position, content_type, width, height, bytes, expires_at)
     VALUES ($1, $2, 0, 'image/png', 1024, 1024, 3, now() + $3 * interval '1 second')`,
    [imageId, requestId, expiresInSeconds],
  );
  return { requestId, imageId };
}

beforeAll(async () => {
  database = await freshDatabase();
  db = await openDb(database.url);
  await migrate(db, "generation", fileURLToPath(new URL("../migrations", import.meta.url)), fileURLToPath(new URL("../sql/functions", import.meta.url)));
  root = await mkdtemp(join(tmpdir(), "orvado-sweeper-"));
  s3 = await startLocalS3();
});
afterAll(async () => {
  await db?.close();
  await database?.drop();
  await s3?.close();
  await rm(root, { recursive: true, force: true });
});

describe.each(stores)("the file sweeper on %s", (_name, openStore) => {
  it("deletes the files whose links expired, keeps the others, and marks the rows", async () => {
    const store = openStore();
    const expired = await finishedJob(store, -5);
    const live = await finishedJob(store, 3600);
    const result = await sweepExpiredFiles({ db, store, logger });
    expect(result.imagesDeleted).toBeGreaterThanOrEqual(1);
    expect(await store.open(expired.imageId)).toBeNull();
    const kept = await store.open(live.imageId);
    expect(kept).not.toBeNull();
    for await (const _chunk of kept!.stream) void _chunk;
    expect(await findImage(db, expired.imageId)).toBeNull();
    expect(await findImage(db, live.imageId)).not.toBeNull();

    const deps = { db, store, urlSigningSecret: "sweeper-test-link-secret" };
    expect(await lookupJob(deps, expired.requestId, ACCOUNT, "url")).toMatchObject({ case: "failure", value: { code: ErrorCode.LINK_EXPIRED } });
    expect(await lookupJob(deps, live.requestId, ACCOUNT, "url")).toMatchObject({ case: "images" });
    // A second sweep finds nothing left to do for it.
    await sweepExpiredFiles({ db, store, logger });
    expect(await findImage(db, live.imageId)).not.toBeNull();
  });
});

describe("the file sweeper", () => {
  it("prunes Idempotency-Keys past their 24 hours and keeps live ones", async () => {
    await db.query(
      `INSERT INTO generation.idempotency_keys (account_id, key_id, idempotency_key, body_hash, request_id, expires_at) VALUES
         ($1, 'key_a', 'old', 'h', $2, now() - interval '1 second'), ($1, 'key_a', 'live', 'h', $3, now() + interval '1 hour')`,
      [ACCOUNT, newRequestId(), newRequestId()],
    );
    const { keysPruned } = await sweepExpiredFiles({ db, store: new SegmentImageStore(root), logger });
    expect(keysPruned).toBe(1);
    const { rows } = await db.query<{ idempotency_key: string }>("SELECT idempotency_key FROM generation.idempotency_keys WHERE account_id = $1", [ACCOUNT]);
    expect(rows.map((row) => row.idempotency_key)).toEqual(["live"]);
  });

  it("runs on its own on every interval until stopped", async () => {
    const store = new SegmentImageStore(root);
    const expired = await finishedJob(store, -1);
    const stop = startFileSweeper({ db, store, logger }, 1000);
    while (await findImage(db, expired.imageId)) await new Promise((resolve) => setTimeout(resolve, 100));
    await stop();
    expect(await findImage(db, expired.imageId)).toBeNull();
  });
});
