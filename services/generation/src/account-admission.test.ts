import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { newRequestId } from "@orvado/core";
import { openDb, type Db } from "@orvado/db";
import { ErrorCode } from "@orvado/proto";
import { usingServer } from "@orvado/testkit";
import { admitJob, effectiveLimits, releaseJobLease, type EffectiveLimits } from "./account-admission.ts";
import { failOrphanedJobs } from "./orphan-jobs.ts";
import { openGenerationTestDb } from "./test-support.ts";

// Fair-share admission against real SQL (PostgreSQL with TEST_DATABASE_URL, else PGlite).
// With PostgreSQL the admissions go through two independent connection pools, as
// two generation replicas would; PGlite has one connection, so both are the same.

let testDb: Awaited<ReturnType<typeof openGenerationTestDb>>;
let replicaA: Db;
let replicaB: Db;
const LEASE_MS = 600_000;

beforeAll(async () => {
  testDb = await openGenerationTestDb();
  replicaA = testDb.db;
  replicaB = usingServer() ? await openDb(testDb.url) : testDb.db;
});

afterAll(async () => {
  if (replicaB !== replicaA) await replicaB.close();
  await testDb?.close();
});

const limits = (over: Partial<EffectiveLimits>): EffectiveLimits => ({ maxConcurrentJobs: null, accountRequestsPerMinute: null, keyRequestsPerMinute: null, ...over });
const ids = (accountId: string, keyId = "key_a") => ({ requestId: newRequestId(), accountId, keyId });

/** `count` admissions at once, alternating between the two replicas' pools. */
async function admitAtOnce(count: number, make: () => ReturnType<typeof ids>, rule: EffectiveLimits) {
  const requests = Array.from({ length: count }, make);
  const answers = await Promise.all(requests.map((request, index) => admitJob(index % 2 === 0 ? replicaA : replicaB, request, rule, LEASE_MS)));
  return requests.map((request, index) => ({ request, answer: answers[index]! }));
}

describe("effectiveLimits", () => {
  it("fills in the service default for an account without its own concurrent-job limit; 0 means no limit", () => {
    expect(effectiveLimits(undefined, 32)).toEqual(limits({ maxConcurrentJobs: 32 }));
    expect(effectiveLimits({ accountMaxConcurrentJobs: 3 } as never, 32).maxConcurrentJobs).toBe(3);
    expect(effectiveLimits({ accountMaxConcurrentJobs: 0 } as never, 32).maxConcurrentJobs).toBeNull();
    expect(effectiveLimits(undefined, 0).maxConcurrentJobs).toBeNull();
    expect(effectiveLimits({ accountRequestsPerMinute: 0, keyRequestsPerMinute: 7 } as never, 0)).toEqual(limits({ keyRequestsPerMinute: 7 }));
  });
});

describe("concurrent jobs per account (admitJob)", () => {
  it("admits exactly the limit out of 60 simultaneous requests from two replicas, and refuses the rest with 429 and Retry-After", async () => {
    const results = await admitAtOnce(60, () => ids("acct_burst"), limits({ maxConcurrentJobs: 5 }));
    const admitted = results.filter((r) => r.answer.ok);
    expect(admitted).toHaveLength(5);
    for (const { answer } of results.filter((r) => !r.answer.ok)) {
      if (answer.ok) continue;
      expect(answer.refusal.code).toBe(ErrorCode.CONCURRENT_JOB_LIMIT);
      expect(answer.refusal.retryAfterSeconds).toBeGreaterThan(0);
    }
    const { rows } = await replicaA.query<{ n: bigint }>("SELECT count(*) AS n FROM generation.job_leases WHERE account_id = 'acct_burst'");
    expect(Number(rows[0]!.n)).toBe(5);
  });

  it("one account's full limit does not touch another account", async () => {
    await admitAtOnce(3, () => ids("acct_full"), limits({ maxConcurrentJobs: 3 }));
    const other = await admitJob(replicaB, ids("acct_other"), limits({ maxConcurrentJobs: 3 }), LEASE_MS);
    expect(other.ok).toBe(true);
  });

  it("a released lease frees its slot for the next request, on the other replica too", async () => {
    const rule = limits({ maxConcurrentJobs: 1 });
    const first = ids("acct_release");
    expect((await admitJob(replicaA, first, rule, LEASE_MS)).ok).toBe(true);
    expect((await admitJob(replicaB, ids("acct_release"), rule, LEASE_MS)).ok).toBe(false);
    await releaseJobLease(replicaA, first.requestId);
    expect((await admitJob(replicaB, ids("acct_release"), rule, LEASE_MS)).ok).toBe(true);
  });

  it("a lease whose process died stops counting once it expires", async () => {
    const rule = limits({ maxConcurrentJobs: 1 });
    const crashed = ids("acct_crash");
    expect((await admitJob(replicaA, crashed, rule, LEASE_MS)).ok).toBe(true);
    expect((await admitJob(replicaB, ids("acct_crash"), rule, LEASE_MS)).ok).toBe(false);
    // Time passing beyond the lease (the job limit plus the orphan grace), without a sleep.
    await replicaA.query("UPDATE generation.job_leases SET expires_at = now() - interval '1 second' WHERE request_id = $1", [crashed.requestId]);
    expect((await admitJob(replicaB, ids("acct_crash"), rule, LEASE_MS)).ok).toBe(true);
  });

  it("the orphan sweeper deletes the lease of the job it fails", async () => {
    const orphan = ids("acct_orphan");
    expect((await admitJob(replicaA, orphan, limits({ maxConcurrentJobs: 1 }), LEASE_MS)).ok).toBe(true);
    await replicaA.query(
      `INSERT INTO generation.jobs (request_id, account_id, key_id, model, size, tier, images_requested, response_format, channel, status, created_at)
       VALUES ($1, 'acct_orphan', 'key_a', 'beta', '1024x1024', '1K', 1, 'URL', 'sandbox', 'running', now() - interval '1 hour')`,
      [orphan.requestId],
    );
    expect(await failOrphanedJobs(replicaA, 60_000)).toBeGreaterThanOrEqual(1);
    const { rows } = await replicaA.query("SELECT 1 FROM generation.job_leases WHERE request_id = $1", [orphan.requestId]);
    expect(rows).toHaveLength(0);
  });
});

describe("requests per minute (admitJob)", () => {
  // The windows are the database clock's minutes: a test that straddles one counts in two.
  beforeEach(async () => {
    const { rows } = await replicaA.query<{ left_ms: number }>("SELECT (60000 - EXTRACT(EPOCH FROM clock_timestamp()) * 1000 % 60000)::int AS left_ms");
    if (rows[0]!.left_ms < 10_000) await new Promise((resolve) => setTimeout(resolve, rows[0]!.left_ms + 100));
  });

  it("admits exactly the key's rpm out of 40 simultaneous requests from two replicas", async () => {
    const results = await admitAtOnce(40, () => ids("acct_rpm_key", "key_rpm"), limits({ keyRequestsPerMinute: 7 }));
    expect(results.filter((r) => r.answer.ok)).toHaveLength(7);
    const refused = results.find((r) => !r.answer.ok)!.answer;
    if (refused.ok) throw new Error("expected a refusal");
    expect(refused.refusal.code).toBe(ErrorCode.RATE_LIMIT_EXCEEDED);
    expect(refused.refusal.retryAfterSeconds).toBeGreaterThanOrEqual(1);
    expect(refused.refusal.retryAfterSeconds).toBeLessThanOrEqual(60);
    expect(refused.refusal.message).toContain("API key");
  });

  it("the account's rpm counts all its keys together", async () => {
    let n = 0;
    const results = await admitAtOnce(20, () => ids("acct_rpm_all", `key_${n++ % 4}`), limits({ accountRequestsPerMinute: 6 }));
    expect(results.filter((r) => r.answer.ok)).toHaveLength(6);
    const refused = results.find((r) => !r.answer.ok)!.answer;
    expect(!refused.ok && refused.refusal.message).toContain("account");
  });

  it("a request refused for concurrency does not use up the minute's requests", async () => {
    const rule = limits({ maxConcurrentJobs: 1, keyRequestsPerMinute: 3 });
    const first = ids("acct_mixed", "key_mixed");
    expect((await admitJob(replicaA, first, rule, LEASE_MS)).ok).toBe(true);
    for (let i = 0; i < 5; i++) {
      const answer = await admitJob(replicaB, ids("acct_mixed", "key_mixed"), rule, LEASE_MS);
      expect(!answer.ok && answer.refusal.code).toBe(ErrorCode.CONCURRENT_JOB_LIMIT);
    }
    await releaseJobLease(replicaA, first.requestId);
    const second = ids("acct_mixed", "key_mixed");
    expect((await admitJob(replicaB, second, rule, LEASE_MS)).ok).toBe(true);
  });
});
