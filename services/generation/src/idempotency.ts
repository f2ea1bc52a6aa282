import { createHash } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { ErrorCode, ResponseFormat, type CreateImageRequest, type CreateImageResponseSchema, type Refusal } from "@orvado/proto";
import { IDEMPOTENCY_KEY_TTL_MS, refusal, type Logger } from "@orvado/core";
import { DEFAULT_IMAGE_COUNT, DEFAULT_SIZE, GENERATION_FIELDS } from "@orvado/core/image-request";
import type { Db } from "@orvado/db";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { lookupJob, type JobLookupDeps, type JobState } from "./job-lookup.ts";
import type { JobObserver } from "./jobs.ts";
import type { Catalog } from "./catalog.ts";
import { findModel } from "./aliases.ts";

// Idempotency-Key (docs/api.md, "Idempotent retries"). One live key per API key
// (account and key id) names one request, so a key only ever receives a replay of
// its own request and its restrictions always apply: a retry with the same body attaches to that request's job
// (waits for it, or reads its stored result) and is never reserved or charged
// again; the same key with another body is a 409. A request that ends in any
// error frees its key, so a retry after a failure runs a new job.

type Reply = MessageInitShape<typeof CreateImageResponseSchema>;

/** How long a key names its request (spec'd in docs/api.md). */
export const IDEMPOTENCY_KEY_TTL_SECONDS = IDEMPOTENCY_KEY_TTL_MS / 1000;
/** Visible ASCII, no spaces, 1–255 characters: safe in headers, logs and SQL text columns. */
export const IDEMPOTENCY_KEY_PATTERN = /^[\x21-\x7E]{1,255}$/;
/** A claim whose job never appeared for this long belongs to a replica that died between claim and reservation. */
const ABANDONED_CLAIM_MS = 60_000;
/** Waiting past the job limit plus this means the job's replica died; billing's sweeper releases its hold. */
const LOST_JOB_GRACE_MS = 60_000;
const POLL_MS = 200;

/**
 * SHA-256 of the parsed request fields with the defaults filled in (absent size = 1024x1024,
 * n = 1, format = url, output_format = png), the OpenAI fields of docs/api.md included. The
 * model is its own id, so a retry naming it by an alias (aliases.ts) is the same request.
 */
export function requestFingerprint(req: CreateImageRequest, catalog: Catalog): string {
  const canonical = [
    // A name no model answers to stays as sent: the request is refused, and its key freed, anyway.
    findModel(catalog, req.model)?.id ?? req.model,
    req.prompt,
    (req.size ?? DEFAULT_SIZE).trim().toLowerCase(),
    req.quality?.trim().toLowerCase() ?? null,
    req.responseFormat === ResponseFormat.B64_JSON ? "b64_json" : "url",
    req.n ?? DEFAULT_IMAGE_COUNT,
    req.user,
    req.outputFormat || GENERATION_FIELDS.output_format.default,
    req.outputCompression ?? null,
    req.background ?? null,
    req.moderation ?? null,
    // Only an edit adds its files, so a generation's fingerprint is what it always was.
    ...(req.edit ? [{ images: req.inputImages.map((image) => sha256(image.data)), mask: req.mask ? sha256(req.mask.data) : null }] : []),
  ];
  return createHash("sha256").update(JSON.stringify(canonical)).digest("hex");
}

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

type Claim = { kind: "claimed" } | { kind: "taken"; requestId: string; bodyHash: string; createdAt: Date } | { kind: "vanished" };

/** Whose Idempotency-Key it is: the API key that sent it, within its account. */
interface KeyScope {
  accountId: string;
  keyId: string;
  idempotencyKey: string;
}

/** One insert wins per (account, API key, Idempotency-Key); an expired one is taken over in the same statement. */
async function claimKey(db: Db, req: CreateImageRequest, bodyHash: string): Promise<Claim> {
  const won = await db.query(
    `INSERT INTO generation.idempotency_keys (account_id, key_id, idempotency_key, body_hash, request_id, expires_at)
     VALUES ($1, $2, $3, $4, $5, now() + $6 * interval '1 second')
     ON CONFLICT (account_id, key_id, idempotency_key) DO UPDATE
       SET body_hash = EXCLUDED.body_hash, request_id = EXCLUDED.request_id, created_at = now(), expires_at = EXCLUDED.expires_at
       WHERE generation.idempotency_keys.expires_at <= now()
     RETURNING request_id`,
    [req.accountId, req.keyId, req.idempotencyKey, bodyHash, req.requestId, IDEMPOTENCY_KEY_TTL_SECONDS],
  );
  if (won.rowCount > 0) return { kind: "claimed" };
  const held = await readKey(db, req);
  return held ? { kind: "taken", ...held } : { kind: "vanished" };
}

async function readKey(db: Db, scope: KeyScope) {
  const { rows } = await db.query<{ request_id: string; body_hash: string; created_at: Date }>(
    `SELECT request_id, body_hash, created_at FROM generation.idempotency_keys
     WHERE account_id = $1 AND key_id = $2 AND idempotency_key = $3 AND expires_at > now()`,
    [scope.accountId, scope.keyId, scope.idempotencyKey],
  );
  const row = rows[0];
  return row ? { requestId: row.request_id, bodyHash: row.body_hash, createdAt: row.created_at } : null;
}

/** Frees the key of a request that ended in an error, so that a retry runs a new job. */
export async function releaseIdempotencyKey(db: Pick<Db, "query">, requestId: string): Promise<void> {
  await db.query("DELETE FROM generation.idempotency_keys WHERE request_id = $1", [requestId]);
}

/** Deletes keys past their 24 hours (called by the sweeper). */
export async function pruneIdempotencyKeys(db: Db): Promise<number> {
  const result = await db.query("DELETE FROM generation.idempotency_keys WHERE expires_at <= now()");
  return result.rowCount;
}

export interface IdempotencyDeps extends JobLookupDeps {
  config: { jobTimeoutMs: number };
  /** The models and their aliases, to fingerprint a request by its model's own id. */
  catalog: Catalog;
  logger: Logger;
}

const replay = (requestId: string, reply: Reply): Reply => ({ ...reply, requestId, replayed: true });

export class IdempotentRequests {
  /** Requests this process is running under a key: retries here await them directly instead of polling. */
  readonly #running = new Map<string, Promise<Reply>>();

  constructor(private readonly deps: IdempotencyDeps) {}

  /**
   * Runs `start` for the first request under the key; every retry gets the same answer. A retry's
   * observer hears `attached` once the original's job runs (an async submit answers then).
   */
  async run(req: CreateImageRequest, start: () => Promise<Reply>, observer?: JobObserver): Promise<Reply> {
    if (!IDEMPOTENCY_KEY_PATTERN.test(req.idempotencyKey)) {
      return { result: { case: "refusal", value: refusal(ErrorCode.INVALID_REQUEST, "Idempotency-Key must be 1 to 255 visible ASCII characters") as Refusal } };
    }
    const bodyHash = requestFingerprint(req, this.deps.catalog);
    for (;;) {
      const claim = await claimKey(this.deps.db, req, bodyHash);
      if (claim.kind === "claimed") return this.#runFirst(req.requestId, start);
      if (claim.kind === "vanished") continue;
      if (claim.bodyHash !== bodyHash) {
        const message = `This Idempotency-Key was already used with a different request body (by ${claim.requestId}); use a new key for a new request`;
        return { result: { case: "refusal", value: refusal(ErrorCode.IDEMPOTENCY_KEY_REUSED, message) as Refusal } };
      }
      const log = this.deps.logger.child({ requestId: req.requestId, originalRequestId: claim.requestId });
      log.info("idempotent retry attaches to its original request");
      const answer = await this.#attach(req, claim, observer);
      if (answer) return replay(claim.requestId, answer);
      log.info("the original request ended before starting a job; claiming the key again");
    }
  }

  async #runFirst(requestId: string, start: () => Promise<Reply>): Promise<Reply> {
    const answer = start();
    this.#running.set(requestId, answer);
    try {
      const reply = await answer;
      if (reply.result?.case !== "images") await releaseIdempotencyKey(this.deps.db, requestId);
      return reply;
    } catch (error) {
      await releaseIdempotencyKey(this.deps.db, requestId);
      throw error;
    } finally {
      this.#running.delete(requestId);
    }
  }

  /** The original's answer, or null when it ended without a job so the key is free to claim again. */
  async #attach(scope: KeyScope, claim: { requestId: string; createdAt: Date }, observer?: JobObserver): Promise<Reply | null> {
    const local = this.#running.get(claim.requestId);
    if (local) {
      if (observer?.attached) void this.#tellOnceRunning(scope, claim.requestId, local, observer);
      return local;
    }
    let told = false;
    for (;;) {
      const state = await lookupJob(this.deps, claim.requestId, scope.accountId, "as_requested");
      if (state && state.case !== "running") return answerOf(state);
      if (state && Date.now() > Number(state.createdUnix) * 1000 + this.deps.config.jobTimeoutMs + LOST_JOB_GRACE_MS) {
        return answerOf({ case: "failure", value: refusal(ErrorCode.ASYNC_IMAGE_FAILED, "The original request's job was lost before it finished; nothing was charged for it", { shouldRetry: true }) as Refusal });
      }
      if (state && !told) {
        told = true;
        observer?.attached?.(claim.requestId, state.createdUnix);
      }
      if (!state && !(await this.#claimStillPending(scope, claim))) return null;
      await sleep(POLL_MS);
    }
  }

  /**
   * Tells a retry's observer when the original, a request of this process, has its job's row: at
   * once when it has it already, otherwise as soon as it is written. An original that ends first
   * needs no telling: its answer (a refusal, or the images as a replay) is the retry's.
   */
  async #tellOnceRunning(scope: KeyScope, requestId: string, answer: Promise<Reply>, observer: JobObserver): Promise<void> {
    let ended = false;
    const end = answer.then(
      () => (ended = true),
      () => (ended = true),
    );
    try {
      while (!ended) {
        const state = await lookupJob(this.deps, requestId, scope.accountId, "url");
        if (state?.case === "running") return observer.attached?.(requestId, state.createdUnix);
        if (state) return;
        await Promise.race([sleep(POLL_MS), end]);
      }
    } catch (error) {
      // The retry still gets the original's answer when it ends; only the early word is lost.
      this.deps.logger.warn({ err: error, requestId }, "could not tell an idempotent retry that its original runs");
    }
  }

  /** False once the original's claim is gone (it was refused before its job started) or was abandoned. */
  async #claimStillPending(scope: KeyScope, claim: { requestId: string; createdAt: Date }): Promise<boolean> {
    const held = await readKey(this.deps.db, scope);
    if (held?.requestId !== claim.requestId) return false;
    if (Date.now() - claim.createdAt.getTime() < ABANDONED_CLAIM_MS) return true;
    await this.deps.db.query(
      "DELETE FROM generation.idempotency_keys WHERE request_id = $1 AND NOT EXISTS (SELECT 1 FROM generation.jobs WHERE request_id = $1)",
      [claim.requestId],
    );
    return false;
  }
}

function answerOf(state: Exclude<JobState, { case: "running" }>): Reply {
  return state.case === "images" ? { result: { case: "images", value: state.value } } : { result: { case: "refusal", value: state.value } };
}
