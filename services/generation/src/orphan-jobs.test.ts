import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fromBinary } from "@bufbuild/protobuf";
import { BillingEventSchema, ErrorCode } from "@orvado/proto";
import { newRequestId } from "@orvado/core";
import type { Db } from "@orvado/db";
import { LOST_JOB_MESSAGE, failOrphanedJobs } from "./orphan-jobs.ts";
import { openGenerationTestDb } from "./test-support.ts";

// A job whose process died stays 'running' until this sweeper fails it, with
// the billing event that releases its hold, exactly once.

let testDb: Awaited<ReturnType<typeof openGenerationTestDb>>;
let db: Db;

beforeAll(async () => {
  testDb = await openGenerationTestDb();
  db = testDb.db;
});
afterAll(async () => {
  await testDb?.close();
});

async function runningJob(ageMs: number): Promise<string> {
  const requestId = newRequestId();
  await db.query(
    `INSERT INTO generation.jobs (request_id, account_id, key_id, model, size, tier, images_requested, response_format, channel, status, created_at)
     VALUES ($1, 'acct_o', 'key_o', 'beta', '1024x1024', '1K', 1, 'URL', 'sandbox', 'running', now() - make_interval(secs => $2::double precision / 1000))`,
    [requestId, ageMs],
  );
  return requestId;
}

const statusOf = async (requestId: string) =>
  (await db.query<{ status: string; error_code: string | null }>("SELECT status, error_code FROM generation.jobs WHERE request_id = $1", [requestId])).rows[0];

describe("failOrphanedJobs", () => {
  it("fails jobs older than the limit with a failed event, leaves younger ones running, and acts once", async () => {
    const lost = await runningJob(120_000);
    const live = await runningJob(1_000);
    expect(await failOrphanedJobs(db, 60_000)).toBe(1);
    expect(await statusOf(lost)).toEqual({ status: "failed", error_code: "async_image_failed" });
    expect((await statusOf(live))!.status).toBe("running");

    const { rows } = await db.query<{ value: Uint8Array }>("SELECT value FROM generation.outbox WHERE event_id = $1", [`${lost}:failed`]);
    expect(rows).toHaveLength(1);
    const event = fromBinary(BillingEventSchema, rows[0]!.value);
    expect(event.kind.case === "failed" && event.kind.value).toMatchObject({ code: ErrorCode.ASYNC_IMAGE_FAILED, reason: LOST_JOB_MESSAGE });

    expect(await failOrphanedJobs(db, 60_000)).toBe(0);
  });

  it("never touches a job that finished", async () => {
    const done = await runningJob(120_000);
    await db.query("UPDATE generation.jobs SET status = 'succeeded', images_delivered = 1, finished_at = now() WHERE request_id = $1", [done]);
    await failOrphanedJobs(db, 60_000);
    expect((await statusOf(done))!.status).toBe("succeeded");
  });
});
