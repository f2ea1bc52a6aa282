import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newRequestId } from "@orvado/core";
import type { Db } from "@orvado/db";
import { Tier } from "@orvado/proto";
import { countingStatements as counting } from "@orvado/testkit";
import { parseCatalog } from "./catalog.ts";
import { jobStartWriter, jobSuccessWriter, type JobStart } from "./job-store.ts";
import { openGenerationTestDb } from "./test-support.ts";

// Job-start rows and job outcomes of concurrent jobs share statements; each job
// still learns whether its own rows were written.

let testDb: Awaited<ReturnType<typeof openGenerationTestDb>>;
let db: Db;
const model = parseCatalog({ models: [{ id: "beta", family: "beta", tiers: ["1K"], channels: [{ name: "sandbox", provider: "sandbox", capacity: 10 }] }] }).get("beta")!;

const start = (requestId = newRequestId()): JobStart => ({
  ids: { requestId, accountId: "acct_starts", keyId: "key_starts" },
  spec: { model, prompt: "a lighthouse", size: { width: 1024, height: 1024, label: "1024x1024" }, tier: Tier.TIER_1K, quality: undefined, n: 2 } as JobStart["spec"],
  responseFormat: "URL",
  channel: "sandbox",
});

beforeAll(async () => {
  testDb = await openGenerationTestDb();
  db = testDb.db;
});

afterAll(async () => {
  await testDb?.close();
});

describe("job-start rows (jobStartWriter)", () => {
  it("writes one row per job, those of concurrent jobs in fewer INSERTs than jobs", async () => {
    const { db: countingDb, statements } = counting(db);
    const starts = jobStartWriter(countingDb);
    const jobs = Array.from({ length: 50 }, () => start());
    await Promise.all(jobs.map((job) => starts.call(job)));
    const rows = await db.query<{ request_id: string; status: string; images_requested: number; tier: string; channel: string }>(
      "SELECT request_id, status, images_requested, tier, channel FROM generation.jobs WHERE request_id = ANY($1::text[])",
      [jobs.map((job) => job.ids.requestId)],
    );
    expect(rows.rowCount).toBe(50);
    expect(rows.rows.every((row) => row.status === "running" && row.images_requested === 2 && row.tier === "1K" && row.channel === "sandbox")).toBe(true);
    expect(statements()).toBeLessThan(50);
    expect(statements()).toBeGreaterThanOrEqual(1);
  });

  it("fails only the job whose row the database refuses", async () => {
    const taken = start();
    await jobStartWriter(db).call(taken);
    const starts = jobStartWriter(db);
    const others = Array.from({ length: 9 }, () => start());
    const results = await Promise.allSettled([...others.slice(0, 4), start(taken.ids.requestId), ...others.slice(4)].map((job) => starts.call(job)));
    expect(results.filter((result) => result.status === "rejected")).toHaveLength(1);
    expect(results[4]!.status).toBe("rejected");
    const written = await db.query("SELECT 1 FROM generation.jobs WHERE request_id = ANY($1::text[])", [others.map((job) => job.ids.requestId)]);
    expect(written.rowCount).toBe(9);
  });
});

describe("job outcomes (jobSuccessWriter)", () => {
  it("records each job's images, status and completed event, those of concurrent jobs in fewer statements", async () => {
    const jobs = Array.from({ length: 30 }, () => start());
    await Promise.all(jobs.map((job) => jobStartWriter(db).call(job)));
    const { db: countingDb, statements } = counting(db);
    const successes = jobSuccessWriter(countingDb);
    const expiresAt = new Date(Date.now() + 3_600_000);
    const finishedAts = await Promise.all(
      jobs.map((job, index) =>
        successes.call({
          ids: job.ids,
          slot: null,
          leased: false,
          images: Array.from({ length: 1 + (index % 2) }, (_, position) => ({ imageId: `img_${job.ids.requestId.slice(4)}${position}`, contentType: "image/png", width: 1024, height: 1024, bytes: 100 + position, expiresAt })),
        }),
      ),
    );
    const requestIds = jobs.map((job) => job.ids.requestId);
    const finished = await db.query<{ request_id: string; status: string; images_delivered: number }>(
      "SELECT request_id, status, images_delivered FROM generation.jobs WHERE request_id = ANY($1::text[])",
      [requestIds],
    );
    expect(finished.rowCount).toBe(30);
    // Each job resolves with its own row's finished_at, whichever statement wrote it.
    const written = await db.query<{ request_id: string; finished_at: Date }>("SELECT request_id, finished_at FROM generation.jobs WHERE request_id = ANY($1::text[])", [requestIds]);
    const finishedOf = new Map(written.rows.map((row) => [row.request_id, row.finished_at.getTime()]));
    expect(finishedAts.map((at) => at.getTime())).toEqual(requestIds.map((id) => finishedOf.get(id)));
    expect(finished.rows.every((row) => row.status === "succeeded" && row.images_delivered === 1 + (requestIds.indexOf(row.request_id) % 2))).toBe(true);
    const whole = await db.query<{ account_id: string; model: string; tier: string; images_requested: number; channel: string; created_at: Date; finished_at: Date | null }>(
      "SELECT account_id, model, tier, images_requested, channel, created_at, finished_at FROM generation.jobs WHERE request_id = $1",
      [jobs[2]!.ids.requestId],
    );
    expect(whole.rows[0]).toMatchObject({ account_id: "acct_starts", model: "beta", tier: "1K", images_requested: 2, channel: "sandbox" });
    // created_at is when the start row was written, finished_at when the outcome was: on one clock.
    expect(whole.rows[0]!.finished_at!.getTime()).toBeGreaterThanOrEqual(whole.rows[0]!.created_at.getTime());
    const images = await db.query<{ request_id: string; position: number }>("SELECT request_id, position FROM generation.images WHERE request_id = ANY($1::text[])", [requestIds]);
    expect(images.rowCount).toBe(45);
    const events = await db.query<{ event_id: string }>("SELECT event_id FROM generation.outbox WHERE event_id = ANY($1::text[]) ORDER BY seq", [requestIds.map((id) => `${id}:completed`)]);
    expect(new Set(events.rows.map((row) => row.event_id)).size).toBe(30);
    expect(statements()).toBeLessThan(30);
  });

  it("records a job alone (its own statement, as at one connection) without touching another job's row", async () => {
    const [alone, other] = [start(), start()];
    await Promise.all([alone, other].map((job) => jobStartWriter(db).call(job)));
    const expiresAt = new Date(Date.now() + 3_600_000);
    const images = [0, 1].map((position) => ({ imageId: `img_alone${alone.ids.requestId.slice(4)}${position}`, contentType: "image/png", width: 1024, height: 1024, bytes: 10 + position, expiresAt }));
    const finishedAt = await jobSuccessWriter(db).call({ ids: alone.ids, images, slot: null, leased: false });
    // The job resolves with the instant its row was given, which its answer's `created` is made from.
    const row = await db.query<{ finished_at: Date }>("SELECT finished_at FROM generation.jobs WHERE request_id = $1", [alone.ids.requestId]);
    expect(finishedAt).toBeInstanceOf(Date);
    expect(finishedAt.getTime()).toBe(row.rows[0]!.finished_at.getTime());
    const jobs = await db.query<{ request_id: string; status: string; images_delivered: number }>(
      "SELECT request_id, status, images_delivered FROM generation.jobs WHERE request_id = ANY($1::text[]) ORDER BY request_id = $2 DESC",
      [[alone.ids.requestId, other.ids.requestId], alone.ids.requestId],
    );
    expect(jobs.rows.map(({ status, images_delivered }) => [status, images_delivered])).toEqual([["succeeded", 2], ["running", 0]]);
    const stored = await db.query<{ position: number; bytes: number }>("SELECT position, bytes FROM generation.images WHERE request_id = $1 ORDER BY position", [alone.ids.requestId]);
    expect(stored.rows).toEqual([{ position: 0, bytes: 10 }, { position: 1, bytes: 11 }]);
    const events = await db.query("SELECT 1 FROM generation.outbox WHERE event_id = ANY($1::text[])", [[`${alone.ids.requestId}:completed`, `${other.ids.requestId}:completed`]]);
    expect(events.rowCount).toBe(1);
  });

  it("gives back each job's channel slot and concurrent-job lease in the same statement, and closes a breaker that had failures", async () => {
    const jobs = [start(), start(), start()];
    await Promise.all(jobs.map((job) => jobStartWriter(db).call(job)));
    const channelKey = `beta/outcome-${jobs[0]!.ids.requestId}`;
    await db.query("INSERT INTO generation.channel_state (channel_key, consecutive_failures, trial_slot) VALUES ($1, 1, $2)", [channelKey, `slot-${jobs[0]!.ids.requestId}`]);
    for (const job of jobs) {
      await db.query("INSERT INTO generation.channel_slots (slot_id, channel_key, holder, expires_at) VALUES ($1, $2, 'test', now() + interval '1 minute')", [`slot-${job.ids.requestId}`, channelKey]);
      await db.query("INSERT INTO generation.job_leases (request_id, account_id, expires_at) VALUES ($1, $2, now() + interval '1 minute')", [job.ids.requestId, job.ids.accountId]);
    }
    const expiresAt = new Date(Date.now() + 3_600_000);
    const { db: countingDb, statements } = counting(db);
    const successes = jobSuccessWriter(countingDb);
    // The third job's slot and lease are left to it (a local slot, a job without a lease).
    await Promise.all(
      jobs.map((job, index) =>
        successes.call({
          ids: job.ids,
          images: [{ imageId: `img_freed${job.ids.requestId.slice(4)}`, contentType: "image/png", width: 1024, height: 1024, bytes: 1, expiresAt }],
          slot: index < 2 ? { slotId: `slot-${job.ids.requestId}`, channelKey } : null,
          leased: index < 2,
        }),
      ),
    );
    expect(statements()).toBeLessThanOrEqual(2);
    const slots = await db.query<{ slot_id: string }>("SELECT slot_id FROM generation.channel_slots WHERE channel_key = $1", [channelKey]);
    expect(slots.rows.map((row) => row.slot_id)).toEqual([`slot-${jobs[2]!.ids.requestId}`]);
    const leases = await db.query<{ request_id: string }>("SELECT request_id FROM generation.job_leases WHERE request_id = ANY($1::text[])", [jobs.map((job) => job.ids.requestId)]);
    expect(leases.rows.map((row) => row.request_id)).toEqual([jobs[2]!.ids.requestId]);
    const state = await db.query("SELECT consecutive_failures, trial_slot FROM generation.channel_state WHERE channel_key = $1", [channelKey]);
    expect(state.rows).toEqual([{ consecutive_failures: 0, trial_slot: null }]);
  });

  it("fails only the job whose rows the database refuses", async () => {
    const jobs = Array.from({ length: 6 }, () => start());
    await Promise.all(jobs.map((job) => jobStartWriter(db).call(job)));
    const expiresAt = new Date(Date.now() + 3_600_000);
    const image = (imageId: string) => [{ imageId, contentType: "image/png", width: 1024, height: 1024, bytes: 1, expiresAt }];
    const successes = jobSuccessWriter(db);
    await successes.call({ ids: jobs[0]!.ids, images: image("img_takenimage0001"), slot: null, leased: false });
    // Five at once; the third reuses the first job's image id, which the images' primary key refuses.
    const rest = jobs.slice(1);
    const results = await Promise.allSettled(rest.map((job, index) => successes.call({ ids: job.ids, images: image(index === 2 ? "img_takenimage0001" : `img_ownimage0000${index}`), slot: null, leased: false })));
    expect(results.map((result) => result.status)).toEqual(["fulfilled", "fulfilled", "rejected", "fulfilled", "fulfilled"]);
    const finished = await db.query<{ request_id: string }>("SELECT request_id FROM generation.jobs WHERE status = 'succeeded' AND request_id = ANY($1::text[])", [rest.map((job) => job.ids.requestId)]);
    expect(finished.rows.map((row) => row.request_id).sort()).toEqual(rest.filter((_, index) => index !== 2).map((job) => job.ids.requestId).sort());
  });
});
