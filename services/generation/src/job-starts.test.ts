import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newRequestId } from "@orvado/core";
import { migrate, openDb, type Db } from "@orvado/db";
import { Tier } from "@orvado/proto";
import { freshDatabase, type FreshDatabase } from "@orvado/testkit";
import { parseCatalog } from "./catalog.ts";
import { JobStarts, type JobStart } from "./job-store.ts";

// Job-start rows of concurrent requests share INSERTs; each job still learns
// whether its own row was written.

let database: FreshDatabase;
let db: Db;
const model = parseCatalog({ models: [{ id: "beta", family: "beta", tiers: ["1K"], channels: [{ name: "sandbox", provider: "sandbox", capacity: 10 }] }] }).get("beta")!;

/** Counts the statements that reach the database. */
function counting(inner: Db): { db: Db; statements: () => number } {
  let count = 0;
  const db: Db = { ...inner, query: (sql, params, options) => ((count += 1), inner.query(sql, params, options)) } as Db;
  return { db, statements: () => count };
}

const start = (requestId = newRequestId()): JobStart => ({
  ids: { requestId, accountId: "acct_starts", keyId: "key_starts" },
  spec: { model, prompt: "a lighthouse", size: { width: 1024, height: 1024, label: "1024x1024" }, tier: Tier.TIER_1K, quality: undefined, n: 2 } as JobStart["spec"],
  responseFormat: "URL",
  channel: "sandbox",
});

beforeAll(async () => {
  database = await freshDatabase();
  db = await openDb(database.url);
  await migrate(db, "generation", fileURLToPath(new URL("../migrations", import.meta.url)));
});

afterAll(async () => {
  await db?.close();
  await database?.drop();
});

describe("JobStarts", () => {
  it("writes one row per job, those of concurrent jobs in fewer INSERTs than jobs", async () => {
    const { db: countingDb, statements } = counting(db);
    const starts = new JobStarts(countingDb);
    const jobs = Array.from({ length: 50 }, () => start());
    await Promise.all(jobs.map((job) => starts.record(job)));
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
    await new JobStarts(db).record(taken);
    const starts = new JobStarts(db);
    const others = Array.from({ length: 9 }, () => start());
    const results = await Promise.allSettled([...others.slice(0, 4), start(taken.ids.requestId), ...others.slice(4)].map((job) => starts.record(job)));
    expect(results.filter((result) => result.status === "rejected")).toHaveLength(1);
    expect(results[4]!.status).toBe("rejected");
    const written = await db.query("SELECT 1 FROM generation.jobs WHERE request_id = ANY($1::text[])", [others.map((job) => job.ids.requestId)]);
    expect(written.rowCount).toBe(9);
  });
});
