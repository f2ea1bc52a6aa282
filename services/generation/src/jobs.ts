import { ErrorCode, ResponseFormat, type BillingService, type CreateImageRequest, type Refusal } from "@orvado/proto";
import { refusal, type Logger, type SharedCalls } from "@orvado/core";
import type { Client } from "@orvado/rpc";
import type { Db } from "@orvado/db";
import type { OutboxRelay } from "@orvado/events";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { CreateImageResponseSchema } from "@orvado/proto";
import type { Catalog } from "./catalog.ts";
import { ChannelPool, type ChannelCapacity, type ChannelSlot } from "./capacity.ts";
import { validateImageRequest, type JobSpec } from "./validate.ts";
import { CallGate } from "./call-gate.ts";
import { ANSWER_GATE_LIMITS, AnswerGate, type AnswerPass } from "./answer-gate.ts";
import { jobStartWriter, jobSuccessWriter, recordJobChannel, recordJobFailure, type JobStart, type JobSuccess, type StoredImage } from "./job-store.ts";
import { describe as describeError, generateOnChannel, type UpstreamOutcome } from "./providers/upstream.ts";
import type { UpstreamProgress } from "./providers/types.ts";
import type { ImageStore } from "./storage/store.ts";
import { storedImageLink } from "./storage/signed-links.ts";
import { encodeImage } from "./output-format.ts";
import type { GenerationConfig } from "./config.ts";
import type { BillingEventIds } from "@orvado/events";
import { IdempotentRequests } from "./idempotency.ts";
import type { GenerationMetrics, JobOutcome } from "./metrics.ts";
import { admitJob, effectiveLimits, releaseJobLease } from "./account-admission.ts";
import { readEditInputs } from "./edit-inputs.ts";
import { channelCanEdit } from "./providers/edit-support.ts";
import { channelKey } from "./catalog.ts";
import { answerCreatedUnix } from "./job-lookup.ts";
import { reserveRequestFor } from "./reserve-request.ts";
import { JobProgressWriter } from "./job-progress.ts";

type CreateImageReply = MessageInitShape<typeof CreateImageResponseSchema>;

export interface JobDeps {
  db: Db;
  billing: Client<typeof BillingService>;
  store: ImageStore;
  relay: OutboxRelay;
  catalog: Catalog;
  config: GenerationConfig;
  logger: Logger;
  /** Prometheus counters per model and channel (metrics.ts); absent in unit tests. */
  metrics?: GenerationMetrics;
}

const refused = (value: Refusal): CreateImageReply => ({ result: { case: "refusal", value } });

/** Who follows a job while it runs, besides the caller awaiting its answer: a stream, an async submit. */
export interface JobObserver {
  /** The job is recorded as running and its upstream is about to be asked. Never called for a job refused before. */
  started?(): void;
  /** The upstream's progress and previews (providers/types.ts UpstreamProgress), as they come. */
  progress?(progress: UpstreamProgress): void;
  /**
   * An Idempotency-Key retry found its original request's job running (its row written, on any
   * replica): the original's request id and when its job started. The retry follows that job
   * instead of starting one, and its answer is still the original's, when that job ends.
   */
  attached?(originalRequestId: string, createdUnix: bigint): void;
}

/**
 * The job lifecycle: validate → take a channel slot → reserve → write the job's
 * 'running' row → run → store → record the outcome with its billing event. A job runs to its end whatever
 * happens to the caller's connection: a client that leaves is still charged.
 */
// Billing answers the reservations that arrive while one of its statements runs in
// the next statement (reserve_holds), so calls in flight cost it no connections; the
// gate only bounds a burst's queue in billing, and is set well above the connections
// a busy edge keeps open (docs/design-choices.md#shared-statements).
const RESERVE_CALLS_IN_FLIGHT = 256;

export class JobRunner {
  /** Channels with their capacity, circuit breaker and key, shared across replicas in PostgreSQL (capacity.ts). */
  readonly channels: ChannelPool;
  /** Slots this process holds per `<model>/<channel>` (the metrics' gauges). */
  readonly capacities: Map<string, ChannelCapacity>;
  readonly #inFlight = new Set<Promise<CreateImageReply>>();
  /** Reservations in flight to billing at once (call-gate.ts), so a burst of jobs holds queued callbacks, not RPCs. */
  readonly #reserveGate = new CallGate(RESERVE_CALLS_IN_FLIGHT);
  /** Upstream answers between their arrival and their stored images, bounded in number and bytes (answer-gate.ts). */
  readonly answerGate: AnswerGate;
  /** Start rows and outcomes of concurrent jobs go in one statement each (SharedCalls in @orvado/core). */
  readonly #jobStarts: SharedCalls<JobStart, void>;
  readonly #jobSuccesses: SharedCalls<JobSuccess, Date>;
  readonly #idempotency: IdempotentRequests;
  readonly #progress: JobProgressWriter;

  constructor(private readonly deps: JobDeps) {
    this.#idempotency = new IdempotentRequests({ ...deps, urlSigningSecret: deps.config.urlSigningSecret });
    this.#jobStarts = jobStartWriter(deps.db);
    this.#jobSuccesses = jobSuccessWriter(deps.db);
    this.#progress = new JobProgressWriter({ db: deps.db, store: deps.store, urlTtlSeconds: deps.config.urlTtlSeconds, logger: deps.logger });
    this.answerGate = new AnswerGate(ANSWER_GATE_LIMITS);
    // Throws at start when a channel's key variable is missing (catalog.ts resolveChannelKeys).
    this.channels = new ChannelPool(deps.catalog, deps.db, {
      failureThreshold: deps.config.breakerFailures,
      cooldownMs: deps.config.breakerCooldownMs,
      readKey: deps.config.readChannelKey,
      leaseTtlMs: deps.config.channelLeaseTtlMs,
      leaseRenewMs: deps.config.channelLeaseRenewMs,
      logger: deps.logger.child({ component: "channel-slots" }),
    });
    this.capacities = this.channels.capacities;
  }

  get inFlight(): number {
    return this.#inFlight.size;
  }

  /** With an Idempotency-Key, a retry attaches to its original request instead of starting a job (idempotency.ts). */
  async createImage(req: CreateImageRequest, observer?: JobObserver): Promise<CreateImageReply> {
    if (req.idempotencyKey) return this.#idempotency.run(req, () => this.#createImage(req, observer), observer);
    return this.#createImage(req, observer);
  }

  async #createImage(req: CreateImageRequest, observer?: JobObserver): Promise<CreateImageReply> {
    const validation = validateImageRequest(req, this.deps.catalog, this.deps.config.maxImagesPerRequest);
    if (!validation.ok) return refused(validation.refusal);
    const { spec } = validation;
    if (req.edit) {
      // Read (headers only) before any slot or hold: a file that is not an image is a 400.
      const read = await readEditInputs(req.inputImages, req.mask);
      if (!read.ok) return refused(read.refusal);
      spec.edit = read.inputs;
    }
    const ids: BillingEventIds = { requestId: req.requestId, accountId: req.accountId, keyId: req.keyId };
    // Fair share first (account-admission.ts): a request over its account's or key's limit takes no slot and holds nothing.
    let admission;
    try {
      admission = await admitJob(this.deps.db, ids, effectiveLimits(req.limits, this.deps.config.accountMaxConcurrentJobs), this.#leaseMs);
    } catch (error) {
      return this.#notStarted(req.requestId, error);
    }
    if (!admission.ok) return refused(admission.refusal);
    const lease = { held: admission.leased };
    const releaseLease = async () => {
      if (!lease.held) return;
      lease.held = false;
      await this.#releaseLease(req.requestId);
    };
    const slotAsked = performance.now();
    const admitted = await this.#slotAndHold(req, spec, ids);
    this.deps.metrics?.stepTook("slot_and_hold", slotAsked);
    if (!admitted.ok) {
      await releaseLease();
      return admitted.reply;
    }
    const { slot } = admitted;
    const start: JobStart = { ids, spec, responseFormat: ResponseFormat[req.responseFormat] ?? "URL", channel: slot.channel.name };
    const job = this.#run(start, req.responseFormat, slot, lease, observer).finally(releaseLease);
    this.#inFlight.add(job);
    job.finally(() => this.#inFlight.delete(job)).catch(() => {});
    return job;
  }

  /**
   * A channel slot, then the billing hold, or the refusal. The slot comes first, so a
   * request refused for capacity holds nothing.
   */
  async #slotAndHold(req: CreateImageRequest, spec: JobSpec, ids: BillingEventIds): Promise<{ ok: true; slot: ChannelSlot } | { ok: false; reply: CreateImageReply }> {
    const taken = await settle(this.channels.take(spec.model, spec.tier, cannotRun(spec)));
    if (!taken.ok) return { ok: false, reply: this.#notStarted(req.requestId, taken.error) };
    if (!taken.value.ok) return { ok: false, reply: this.#noCapacity(spec, taken.value) };
    return this.#holdFor(taken.value.slot, await settle(this.#reserve(req, spec, ids)), req.requestId);
  }

  /** The reservation's answer for a job that has its slot: the slot goes back unless billing held the price. */
  async #holdFor(slot: ChannelSlot, reservation: Settled<Reservation>, requestId: string): Promise<{ ok: true; slot: ChannelSlot } | { ok: false; reply: CreateImageReply }> {
    if (reservation.ok && reservation.value.result.case === "hold") return { ok: true, slot };
    await slot.release();
    if (!reservation.ok) return { ok: false, reply: this.#notStarted(requestId, reservation.error) };
    const answer = reservation.value.result;
    return { ok: false, reply: refused(answer.case === "refusal" ? answer.value : (refusal(ErrorCode.INTERNAL_ERROR, "billing gave no answer") as Refusal)) };
  }

  #reserve(req: CreateImageRequest, spec: JobSpec, ids: BillingEventIds): Promise<Reservation> {
    return this.#reserveGate.run(() => this.deps.billing.reserve(reserveRequestFor(req, spec, ids)));
  }

  #noCapacity(spec: JobSpec, taken: { reason: "full" | "unhealthy"; retryAfterSeconds: number }): CreateImageReply {
    this.deps.metrics?.noCapacity(spec.model.id);
    const message =
      taken.reason === "full"
        ? `No capacity for ${spec.model.id} at present; retry in about a minute`
        : `No healthy upstream for ${spec.model.id} at present; retry in ${taken.retryAfterSeconds} seconds`;
    return refused(refusal(ErrorCode.NO_CAPACITY, message, { retryAfterSeconds: taken.retryAfterSeconds, shouldRetry: true }) as Refusal);
  }

  /** A lease lasts as long as a job can: the time limit plus the grace the orphan sweeper gives it. */
  get #leaseMs(): number {
    return this.deps.config.jobTimeoutMs + this.deps.config.orphanGraceMs;
  }

  /** Awaited before the answer, so a client that waits for one job before the next is never refused for it. */
  async #releaseLease(requestId: string): Promise<void> {
    try {
      await releaseJobLease(this.deps.db, requestId);
    } catch (error) {
      // The lease expires by itself (#leaseMs); until then it counts against the account.
      this.deps.logger.warn({ err: error, requestId }, "could not release the job's concurrent-job lease");
    }
  }

  /**
   * Billing or the database failed before the job was recorded: nothing is stored
   * or charged, and a hold that may have been made is released by billing's
   * sweeper. Safe to retry.
   */
  #notStarted(requestId: string, error: unknown): CreateImageReply {
    this.deps.logger.warn({ err: error, requestId }, "job not started: a dependency failed");
    return refused(refusal(ErrorCode.SERVICE_UNAVAILABLE, "The service is briefly unavailable; nothing was charged, retry in a few seconds", { retryAfterSeconds: 5, shouldRetry: true }) as Refusal);
  }

  /** Resolves once every job in flight has finished (graceful shutdown). */
  async drain(): Promise<void> {
    while (this.#inFlight.size > 0) await Promise.allSettled([...this.#inFlight]);
  }

  async #run(start: JobStart, format: ResponseFormat, firstSlot: ChannelSlot, lease: { held: boolean }, observer?: JobObserver): Promise<CreateImageReply> {
    const { ids, spec } = start;
    // The job's 'running' row, before the upstream is asked: a job that cannot be recorded is not run.
    const written = await settle(this.#jobStarts.call(start));
    if (!written.ok) {
      await firstSlot.release();
      return this.#notStarted(ids.requestId, written.error);
    }
    observer?.started?.();
    const log = jobLog(this.deps.logger, ids.requestId, spec.model.id);
    const { signal, clear: clearDeadline } = jobDeadline(this.deps.config.jobTimeoutMs);
    const jobEnded = this.deps.metrics?.jobStarted(spec.model.id, firstSlot.channel.name);
    let metricOutcome: JobOutcome = "failed";
    let slot = firstSlot;
    const answerPlace = this.answerGate.pass();
    // Every job's progress goes to its row, for the lookup on any replica (job-progress.ts), and to its observer.
    const recorded = this.#progress.follow(ids.requestId);
    const onProgress = (progress: UpstreamProgress) => {
      recorded.report(progress);
      observer?.progress?.(progress);
    };
    try {
      let stepStart = performance.now();
      const outcome = await this.#generateWithFailover(ids, spec, signal, slot, (next) => (slot = next), log, answerPlace, onProgress);
      this.deps.metrics?.stepTook("upstream", stepStart);
      if (!outcome.ok) metricOutcome = outcome.kind === "refused" ? "refused" : "failed";
      if (!outcome.ok) return await this.#fail(ids, outcome.message, outcome.kind !== "refused", outcome.detail);
      stepStart = performance.now();
      const { resized } = outcome;
      const { stored, answers } = await this.#store(spec, takeImages(outcome), format);
      // Stored: the upstream's answer is no longer held (a b64_json answer keeps only its image).
      answerPlace.release();
      this.deps.metrics?.stepTook("store", stepStart);
      stepStart = performance.now();
      // The slot and the lease go back in the success's own statement (job-store.ts); a slot
      // that statement cannot carry is released on its own when the job ends.
      const handOff = slot.handOff();
      const finishedAt = await this.#jobSuccesses.call({ ids, images: stored, slot: handOff, leased: lease.held });
      if (handOff) slot.handedOff();
      lease.held = false;
      this.deps.metrics?.stepTook("outcome", stepStart);
      this.deps.relay.poke();
      metricOutcome = "succeeded";
      log.info({ images: stored.length, channel: slot.channel.name, resized }, "job succeeded");
      return { result: { case: "images", value: { createdUnix: answerCreatedUnix(finishedAt), data: stored.map((image, index) => answeredImage(image, answers[index]!)) } } };
    } catch (error) {
      const timedOut = signal.aborted;
      metricOutcome = timedOut ? "timeout" : "failed";
      log.warn({ err: error, timedOut, channel: slot.channel.name }, "job failed");
      const message = timedOut
        ? `The job did not finish within ${Math.round(this.deps.config.jobTimeoutMs / 1000)} seconds`
        : "The model failed the job";
      const detail = `${slot.channel.name}: ${timedOut ? `the job's limit of ${this.deps.config.jobTimeoutMs} ms was reached while the upstream ran` : describeError(error)}`;
      // Counts against the channel only if its call had not answered: the slot keeps the first verdict.
      if (timedOut) slot.failed(detail);
      return await this.#fail(ids, message, true, detail);
    } finally {
      recorded.end();
      answerPlace.release();
      clearDeadline();
      // Awaited before the answer, so a client that waits for one job before the next finds its slot free
      // (a no-op once the success statement gave it back).
      await slot.release();
      jobEnded?.(metricOutcome);
    }
  }

  /**
   * Tries the job on its channel, and on a failure (5xx, timeout, connection error,
   * malformed answer) before any image was produced, on the next healthy channel by
   * priority: all inside this one job and its one reservation, so it is charged once.
   * A refusal is final. The job's own time limit aborts whichever call is running.
   */
  async #generateWithFailover(
    ids: BillingEventIds,
    spec: JobSpec,
    signal: AbortSignal,
    first: ChannelSlot,
    onSwitch: (slot: ChannelSlot) => void,
    log: JobLog,
    answerPlace: AnswerPass,
    onProgress?: (progress: UpstreamProgress) => void,
  ): Promise<UpstreamOutcome> {
    const tried = new Set<string>([first.key, ...cannotRun(spec)]);
    // What each channel tried said, for the operator (the failed job's failure_detail).
    const failures: string[] = [];
    let slot = first;
    for (;;) {
      let outcome: UpstreamOutcome;
      try {
        outcome = await generateOnChannel(slot.channel, slot.apiKey, this.#upstreamRequest(spec), signal, this.deps.config, answerPlace, onProgress);
      } catch (error) {
        // The job's own deadline ends the job (its catch counts it against the channel); anything else thrown is a failure of this channel.
        if (signal.aborted) throw error;
        outcome = { ok: false, kind: "failed", message: "The model failed the job", detail: describeError(error) };
      }
      if (outcome.ok || outcome.kind === "refused") {
        slot.succeeded();
        if (!outcome.ok) log.info({ channel: slot.channel.name, detail: outcome.detail }, "upstream refused the prompt");
        return outcome.ok ? outcome : { ...outcome, detail: [...failures, `${slot.channel.name}: ${outcome.detail}`].join("; ") };
      }
      // Its release keeps the cause as the channel's last failure, in the same statement that counts it.
      slot.failed(outcome.detail);
      failures.push(`${slot.channel.name}: ${outcome.detail}`);
      // Nothing of this channel's answers is kept: the place goes to others while the next channel is asked.
      answerPlace.release();
      log.warn({ channel: slot.channel.name, detail: outcome.detail }, "upstream failed; trying the next channel");
      const next = await this.channels.take(spec.model, spec.tier, tried).catch((error: unknown) => {
        log.warn({ err: error }, "could not ask for the next channel; the job fails");
        return null;
      });
      if (!next?.ok) return { ...outcome, detail: failures.join("; ") };
      await slot.release();
      slot = next.slot;
      tried.add(slot.key);
      onSwitch(slot);
      await recordJobChannel(this.deps.db, ids.requestId, slot.channel.name);
    }
  }

  #upstreamRequest(spec: JobSpec) {
    return {
      prompt: spec.prompt,
      width: spec.size.width,
      height: spec.size.height,
      n: spec.n,
      quality: spec.quality,
      edit: spec.edit,
      background: spec.background,
      moderation: spec.moderation,
      partialImages: spec.partialImages,
    };
  }

  /** `detail` is the upstream's cause, kept for the operator (never in the client's answer). */
  async #fail(ids: BillingEventIds, message: string, shouldRetry: boolean, detail: string): Promise<CreateImageReply> {
    const recording = performance.now();
    await recordJobFailure(this.deps.db, ids, ErrorCode.ASYNC_IMAGE_FAILED, message, shouldRetry, detail);
    this.deps.metrics?.stepTook("outcome", recording);
    this.deps.relay.poke();
    return refused(refusal(ErrorCode.ASYNC_IMAGE_FAILED, message, { shouldRetry }) as Refusal);
  }

  /**
   * Encodes and stores the job's images, and keeps of them only what its answer needs:
   * the link, or for b64_json the bytes. A job waits for its success statement after
   * this, and at the end of a burst thousands wait at once; a link-answered job then
   * holds no image there.
   */
  async #store(spec: JobSpec, images: Buffer[], format: ResponseFormat): Promise<{ stored: StoredImage[]; answers: (string | Buffer)[] }> {
    const expiresAt = new Date(Date.now() + this.deps.config.urlTtlSeconds * 1000);
    // All encoded before any is stored: an image that cannot be encoded fails the job with nothing written.
    const encoded = await Promise.all(images.map((png) => encodeImage(png, spec.output)));
    const stored = await Promise.all(
      encoded.map(async ({ bytes, contentType }): Promise<StoredImage> => {
        const imageId = await this.deps.store.add(bytes, contentType, { expiresAt });
        return { imageId, contentType, width: spec.size.width, height: spec.size.height, bytes: bytes.length, expiresAt };
      }),
    );
    const answers = format === ResponseFormat.B64_JSON ? encoded.map((image) => image.bytes) : stored.map((image) => storedImageLink(image.imageId, image.expiresAt, image.contentType, this.deps.config.urlSigningSecret));
    return { stored, answers };
  }
}

/** A stored image as the answer gives it: its link, or (b64_json) its bytes as base64. */
function answeredImage(image: StoredImage, answer: string | Buffer) {
  return {
    width: image.width,
    height: image.height,
    content: typeof answer === "string" ? { case: "urlPath" as const, value: answer } : { case: "b64Json" as const, value: answer.toString("base64") },
  };
}

/** The upstream's images, handed over: the outcome no longer holds them once they are stored. */
function takeImages(outcome: { images: Buffer[] }): Buffer[] {
  const images = outcome.images;
  outcome.images = [];
  return images;
}

/** A job's log lines, each carrying its request id and model. */
function jobLog(logger: Logger, requestId: string, model: string) {
  return {
    info: (fields: Record<string, unknown>, message: string) => logger.info({ requestId, model, ...fields }, message),
    warn: (fields: Record<string, unknown>, message: string) => logger.warn({ requestId, model, ...fields }, message),
  };
}

type JobLog = ReturnType<typeof jobLog>;

/** The model's channels that cannot run this job: for an edit, those that do not edit (or not with its mask). */
function cannotRun(spec: JobSpec): Set<string> {
  const edit = spec.edit;
  if (!edit) return new Set();
  const needs = { withMask: edit.mask !== undefined, images: edit.images.length };
  return new Set(spec.model.channels.filter((channel) => !channelCanEdit(channel, needs)).map((channel) => channelKey(spec.model.id, channel.name)));
}

type Reservation = Awaited<ReturnType<Client<typeof BillingService>["reserve"]>>;
type Settled<T> = { ok: true; value: T } | { ok: false; error: unknown };

/** The promise's value or error, for steps that run side by side and are judged together. */
function settle<T>(promise: Promise<T>): Promise<Settled<T>> {
  return promise.then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  );
}

/**
 * The job's time limit as an abort signal whose timer ends with the job.
 * AbortSignal.timeout would keep each finished job's timer (and a transferable
 * signal) alive for the full limit, 10 minutes by default.
 */
function jobDeadline(timeoutMs: number): { signal: AbortSignal; clear(): void } {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new DOMException(`The job did not finish within ${timeoutMs} ms`, "TimeoutError")), timeoutMs);
  return { signal: controller.signal, clear: () => clearTimeout(timer) };
}
