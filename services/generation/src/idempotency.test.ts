import { cp, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { CreateImageRequestSchema, ErrorCode, ResponseFormat, type CreateImageRequest } from "@orvado/proto";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { createLogger, newRequestId } from "@orvado/core";
import { migrate, openDb, type Db } from "@orvado/db";
import { freshDatabase, usingServer, type FreshDatabase } from "@orvado/testkit";
import { IdempotentRequests, requestFingerprint } from "./idempotency.ts";
import { SegmentImageStore } from "./storage/segment-store.ts";
import { parseCatalog } from "./catalog.ts";

// Two IdempotentRequests on one database stand for two generation replicas: a
// retry that lands on the other replica must find the original through
// PostgreSQL (the unique key and the job rows), not through memory.

const SECRET = "idempotency-test-link-secret";
let database: FreshDatabase;
let dbA: Db;
let dbB: Db;
let root: string;
let store: SegmentImageStore;
let replicaA: IdempotentRequests;
let replicaB: IdempotentRequests;

const logger = createLogger("test", "silent");
const sandbox = [{ name: "sandbox", provider: "sandbox", capacity: 1 }];
const catalog = parseCatalog(
  {
    models: [
      { id: "beta", aliases: ["gpt-image-1"], family: "beta", tiers: ["1K"], channels: sandbox },
      { id: "beta-pro", family: "beta", tiers: ["1K"], channels: sandbox },
    ],
  },
  "models file",
  fileURLToPath(new URL("../../../config", import.meta.url)),
);

function request(fields: Omit<MessageInitShape<typeof CreateImageRequestSchema>, "$typeName"> = {}): CreateImageRequest {
  return create(CreateImageRequestSchema, {
    requestId: newRequestId(),
    accountId: "acct_idem",
    keyId: "key_idem",
    model: "beta",
    prompt: "a quiet harbour",
    idempotencyKey: "key-1",
    ...fields,
  });
}

/** What the job runner leaves behind: a job row, then its image and final state. */
async function startJob(db: Db, req: CreateImageRequest) {
  await db.query(
    `INSERT INTO generation.jobs (request_id, account_id, key_id, model, size, tier, images_requested, response_format, channel, status)
     VALUES ($1, $2, 'key_idem', 'beta', '1024x1024', '1K', 1, 'URL', 'sandbox', 'running')`,
    [req.requestId, req.accountId],
  );
}

/** Resolves with the stored image's id. */
async function finishJob(db: Db, req: CreateImageRequest): Promise<string> {
  const imageId = await store.add(Buffer.from("png bytes"), "image/png", { expiresAt: new Date(Date.now() + 3_600_000) });
  await db.query(
    `INSERT INTO generation.images (image_id, request_id, position, content_type, width, height, bytes, expires_at)
     VALUES ($1, $2, 0, 'image/png', 1024, 1024, 9, now() + interval '1 hour')`,
    [imageId, req.requestId],
  );
  await db.query("UPDATE generation.jobs SET status = 'succeeded', images_delivered = 1, finished_at = now() WHERE request_id = $1", [req.requestId]);
  return imageId;
}

function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { open, opened };
}

async function untilJobRow(db: Db, requestId: string) {
  while ((await db.query("SELECT 1 FROM generation.jobs WHERE request_id = $1", [requestId])).rowCount === 0) {
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

beforeAll(async () => {
  database = await freshDatabase();
  dbA = await openDb(database.url);
  // PGlite in memory is one database per handle, so both replicas share it there.
  dbB = usingServer() ? await openDb(database.url) : dbA;
  await migrate(dbA, "generation", fileURLToPath(new URL("../migrations", import.meta.url)), fileURLToPath(new URL("../sql/functions", import.meta.url)));
  root = await mkdtemp(join(tmpdir(), "orvado-idem-"));
  store = new SegmentImageStore(root);
  const config = { jobTimeoutMs: 600_000 };
  replicaA = new IdempotentRequests({ db: dbA, store, urlSigningSecret: SECRET, config, logger, catalog });
  replicaB = new IdempotentRequests({ db: dbB, store, urlSigningSecret: SECRET, config, logger, catalog });
});

afterAll(async () => {
  if (dbB !== dbA) await dbB?.close();
  await dbA?.close();
  await database?.drop();
  await rm(root, { recursive: true, force: true });
});

describe("requestFingerprint", () => {
  const fingerprint = (req: CreateImageRequest) => requestFingerprint(req, catalog);

  it("treats the documented defaults as the values they stand for", () => {
    const explicit = request({ size: "1024x1024", n: 1, responseFormat: ResponseFormat.URL, quality: "HIGH" });
    const implicit = request({ size: " 1024X1024 ", quality: "high" });
    expect(fingerprint(request({ size: undefined, quality: "high" }))).toBe(fingerprint(explicit));
    expect(fingerprint(implicit)).toBe(fingerprint(explicit));
  });

  it("takes a model's alias as the model's own id", () => {
    expect(fingerprint(request({ model: "gpt-image-1" }))).toBe(fingerprint(request({ model: "beta" })));
  });

  it("tells apart any field that changes the result", () => {
    const base = fingerprint(request());
    for (const change of [{ prompt: "a loud harbour" }, { model: "beta-pro" }, { model: "no-such-model" }, { size: "2k" }, { n: 2 }, { quality: "low" }, { responseFormat: ResponseFormat.B64_JSON }]) {
      expect(fingerprint(request(change)), JSON.stringify(change)).not.toBe(base);
    }
  });
});

describe("IdempotentRequests across two replicas", () => {
  it("attaches a retry on the other replica to the running job and answers with the original's images", async () => {
    const key = "cross-replica";
    const first = request({ idempotencyKey: key });
    const held = gate();
    let starts = 0;
    let imageId = "";
    const original = replicaA.run(first, async () => {
      starts += 1;
      await startJob(dbA, first);
      await held.opened;
      imageId = await finishJob(dbA, first);
      return { result: { case: "images", value: { createdUnix: 1n, data: [] } } };
    });
    await untilJobRow(dbB, first.requestId);
    const retry = replicaB.run(request({ idempotencyKey: key }), async () => {
      starts += 1;
      throw new Error("a retry must not start a job");
    });
    held.open();
    const [, replayed] = await Promise.all([original, retry]);
    expect(starts).toBe(1);
    expect(replayed).toMatchObject({ requestId: first.requestId, replayed: true, result: { case: "images" } });
    const images = replayed.result?.case === "images" ? replayed.result.value : null;
    expect(images?.data?.[0]?.content).toMatchObject({ case: "urlPath" });
    expect(String(images?.data?.[0]?.content?.value)).toContain(`/v1/files/${imageId}.png?expires=`);
  });

  it("tells a retry's observer once the original's job runs, on the other replica and on its own", async () => {
    for (const [where, retryReplica] of [["other", replicaB], ["same", replicaA]] as const) {
      const key = `attached-${where}`;
      const first = request({ idempotencyKey: key });
      const rowWritten = gate();
      const held = gate();
      const original = replicaA.run(first, async () => {
        await rowWritten.opened;
        await startJob(dbA, first);
        await held.opened;
        await finishJob(dbA, first);
        return { result: { case: "images", value: { createdUnix: 1n, data: [] } } };
      });
      while ((await dbB.query("SELECT 1 FROM generation.idempotency_keys WHERE request_id = $1", [first.requestId])).rowCount === 0) await sleep(10);
      const attached: Array<[string, bigint]> = [];
      const retry = retryReplica.run(
        request({ idempotencyKey: key }),
        async () => {
          throw new Error("a retry must not start a job");
        },
        { attached: (requestId, createdUnix) => attached.push([requestId, createdUnix]) },
      );
      // Claimed, but no job row yet: nothing runs, so nothing is said.
      await sleep(300);
      expect(attached, where).toEqual([]);
      rowWritten.open();
      while (attached.length === 0) await sleep(10);
      expect(attached[0]![0], where).toBe(first.requestId);
      expect(Math.abs(Number(attached[0]![1]) - Date.now() / 1000), where).toBeLessThan(60);
      held.open();
      const [, replayed] = await Promise.all([original, retry]);
      expect(replayed, where).toMatchObject({ requestId: first.requestId, replayed: true, result: { case: "images" } });
      expect(attached, where).toHaveLength(1);
    }
  });

  it("lets exactly one of many simultaneous first attempts start a job", async () => {
    let starts = 0;
    const attempts = Array.from({ length: 8 }, (_, index) => {
      const req = request({ idempotencyKey: "simultaneous" });
      return (index % 2 ? replicaA : replicaB).run(req, async () => {
        starts += 1;
        await startJob(dbA, req);
        await finishJob(dbA, req);
        return { result: { case: "images", value: { createdUnix: 1n, data: [] } }, requestId: req.requestId };
      });
    });
    const answers = await Promise.all(attempts);
    expect(starts).toBe(1);
    expect(answers.filter((answer) => answer.replayed)).toHaveLength(7);
  });

  it("refuses a different body under a live key with IDEMPOTENCY_KEY_REUSED", async () => {
    const first = request({ idempotencyKey: "reused" });
    await replicaA.run(first, async () => {
      await startJob(dbA, first);
      await finishJob(dbA, first);
      return { result: { case: "images", value: { createdUnix: 1n, data: [] } } };
    });
    const answer = await replicaB.run(request({ idempotencyKey: "reused", prompt: "something else" }), async () => {
      throw new Error("must not start");
    });
    expect(answer.result).toMatchObject({ case: "refusal", value: { code: ErrorCode.IDEMPOTENCY_KEY_REUSED } });
  });

  it("frees the key when the original is refused before its job starts, so a waiting retry runs its own", async () => {
    const refusedFirst = gate();
    const first = request({ idempotencyKey: "refused-first" });
    const original = replicaA.run(first, async () => {
      await refusedFirst.opened;
      return { result: { case: "refusal", value: { code: ErrorCode.NO_CAPACITY, message: "busy", retryAfterSeconds: 60, shouldRetry: true } } };
    });
    // Let the first claim land before the retry arrives.
    while ((await dbB.query("SELECT 1 FROM generation.idempotency_keys WHERE request_id = $1", [first.requestId])).rowCount === 0) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const second = request({ idempotencyKey: "refused-first" });
    const retry = replicaB.run(second, async () => {
      await startJob(dbB, second);
      await finishJob(dbB, second);
      return { result: { case: "images", value: { createdUnix: 1n, data: [] } }, requestId: second.requestId };
    });
    refusedFirst.open();
    expect((await original).result?.case).toBe("refusal");
    expect(await retry).toMatchObject({ requestId: second.requestId, result: { case: "images" } });
  });

  it("takes over a key once its 24 hours have passed", async () => {
    const first = request({ idempotencyKey: "old-key" });
    await replicaA.run(first, async () => {
      await startJob(dbA, first);
      await finishJob(dbA, first);
      return { result: { case: "images", value: { createdUnix: 1n, data: [] } } };
    });
    await dbA.query("UPDATE generation.idempotency_keys SET expires_at = now() - interval '1 second' WHERE request_id = $1", [first.requestId]);
    let started = false;
    await replicaB.run(request({ idempotencyKey: "old-key", prompt: "a new body is fine now" }), async () => {
      started = true;
      return { result: { case: "images", value: { createdUnix: 1n, data: [] } } };
    });
    expect(started).toBe(true);
  });

  it("refuses a malformed key", async () => {
    for (const bad of ["", "with space", "x".repeat(256), "tab\there"]) {
      const answer = await replicaA.run(request({ idempotencyKey: bad }), async () => {
        throw new Error("must not start");
      });
      expect(answer.result, JSON.stringify(bad)).toMatchObject({ case: "refusal", value: { code: ErrorCode.INVALID_REQUEST } });
    }
  });
});

describe("migration 003: Idempotency-Keys scoped to the API key", () => {
  it("gives each live row the key id of its job and drops claims that never started a job", async () => {
    const fresh = await freshDatabase();
    const db = await openDb(fresh.url);
    const before = await mkdtemp(join(tmpdir(), "orvado-migrations-"));
    try {
      const dir = fileURLToPath(new URL("../migrations", import.meta.url));
      for (const file of ["001_jobs.sql", "002_idempotency_and_sweep.sql"]) await cp(join(dir, file), join(before, file));
      await migrate(db, "generation", before);
      const started = request({ accountId: "acct_mig", idempotencyKey: "started" });
      const claimOnly = request({ accountId: "acct_mig", idempotencyKey: "claim-only" });
      await startJob(db, started);
      await db.query(
        `INSERT INTO generation.idempotency_keys (account_id, idempotency_key, body_hash, request_id, expires_at)
         VALUES ('acct_mig', 'started', 'h', $1, now() + interval '1 hour'), ('acct_mig', 'claim-only', 'h', $2, now() + interval '1 hour')`,
        [started.requestId, claimOnly.requestId],
      );
      expect(await migrate(db, "generation", dir)).toContain("004_idempotency_per_api_key.sql");
      const { rows } = await db.query<{ idempotency_key: string; key_id: string; request_id: string }>(
        "SELECT idempotency_key, key_id, request_id FROM generation.idempotency_keys WHERE account_id = 'acct_mig'",
      );
      expect(rows).toEqual([{ idempotency_key: "started", key_id: "key_idem", request_id: started.requestId }]);
    } finally {
      await db.close();
      await fresh.drop();
      await rm(before, { recursive: true, force: true });
    }
  });
});
