import { ErrorCode, ResponseFormat, type BillingService, type CreateImageRequest, type Refusal } from "@orvado/proto";
import { newId, refusal, type Logger } from "@orvado/core";
import type { Client } from "@orvado/rpc";
import type { Db } from "@orvado/db";
import type { OutboxRelay } from "@orvado/events";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { CreateImageResponseSchema } from "@orvado/proto";
import type { Catalog, ChannelConfig } from "./catalog.ts";
import { ChannelCapacity } from "./capacity.ts";
import { validateImageRequest, type JobSpec } from "./validate.ts";
import { recordJobFailure, recordJobStart, recordJobSuccess, type StoredImage } from "./job-store.ts";
import { generateWithSandbox, type ProviderOutcome } from "./sandbox/provider.ts";
import type { ImageStore } from "./storage/store.ts";
import { signImagePath } from "./storage/signed-links.ts";
import type { GenerationConfig } from "./config.ts";
import type { BillingEventIds } from "@orvado/events";

type CreateImageReply = MessageInitShape<typeof CreateImageResponseSchema>;

export interface JobDeps {
  db: Db;
  billing: Client<typeof BillingService>;
  store: ImageStore;
  relay: OutboxRelay;
  catalog: Catalog;
  config: GenerationConfig;
  logger: Logger;
}

/** Capacity is shown on the key used here: one counter per model and channel. */
const slotKey = (modelId: string, channel: string) => `${modelId}/${channel}`;

const refused = (value: Refusal): CreateImageReply => ({ result: { case: "refusal", value } });

/**
 * The job lifecycle: validate → take a channel slot → reserve → run → store →
 * record the outcome with its billing event. A job runs to its end whatever
 * happens to the caller's connection: a client that leaves is still charged.
 */
export class JobRunner {
  readonly capacities = new Map<string, ChannelCapacity>();
  readonly #inFlight = new Set<Promise<CreateImageReply>>();

  constructor(private readonly deps: JobDeps) {
    for (const model of deps.catalog.values()) {
      for (const channel of model.channels) this.capacities.set(slotKey(model.id, channel.name), new ChannelCapacity(channel.capacity));
    }
  }

  get inFlight(): number {
    return this.#inFlight.size;
  }

  async createImage(req: CreateImageRequest): Promise<CreateImageReply> {
    const validation = validateImageRequest(req, this.deps.catalog, this.deps.config.maxImagesPerRequest);
    if (!validation.ok) return refused(validation.refusal);
    const { spec } = validation;
    const slot = this.#takeSlot(spec);
    if (!slot) {
      return refused(refusal(ErrorCode.NO_CAPACITY, `No capacity for ${spec.model.id} at present; retry in about a minute`, { retryAfterSeconds: 60, shouldRetry: true }) as Refusal);
    }
    const ids: BillingEventIds = { requestId: req.requestId, accountId: req.accountId, keyId: req.keyId };
    try {
      const reservation = await this.deps.billing.reserve({
        ...ids,
        keyLimitMicros: req.keyLimitMicros,
        model: spec.model.id,
        tier: spec.tier,
        size: spec.size.label,
        imagesRequested: spec.n,
      });
      if (reservation.result.case !== "hold") {
        slot.release();
        return refused(reservation.result.value ?? (refusal(ErrorCode.INTERNAL_ERROR, "billing gave no answer") as Refusal));
      }
      await recordJobStart(this.deps.db, ids, spec, ResponseFormat[req.responseFormat] ?? "URL", slot.channel.name);
    } catch (error) {
      slot.release();
      throw error;
    }
    const job = this.#run(ids, spec, req.responseFormat, slot);
    this.#inFlight.add(job);
    job.finally(() => this.#inFlight.delete(job)).catch(() => {});
    return job;
  }

  /** Resolves once every job in flight has finished (graceful shutdown). */
  async drain(): Promise<void> {
    while (this.#inFlight.size > 0) await Promise.allSettled([...this.#inFlight]);
  }

  #takeSlot(spec: JobSpec): { channel: ChannelConfig; release: () => void } | null {
    for (const channel of spec.model.channels) {
      const release = this.capacities.get(slotKey(spec.model.id, channel.name))?.tryAcquire();
      if (release) return { channel, release };
    }
    return null;
  }

  async #run(ids: BillingEventIds, spec: JobSpec, format: ResponseFormat, slot: { release: () => void }): Promise<CreateImageReply> {
    const log = this.deps.logger.child({ requestId: ids.requestId, model: spec.model.id });
    const signal = AbortSignal.timeout(this.deps.config.jobTimeoutMs);
    try {
      const outcome = await this.#generate(spec, signal);
      if (!outcome.ok) return await this.#fail(ids, outcome.message, outcome.kind !== "refused");
      const stored = await this.#store(spec, outcome.images);
      await recordJobSuccess(this.deps.db, ids, stored);
      this.deps.relay.poke();
      log.info({ images: stored.length }, "job succeeded");
      return { result: { case: "images", value: this.#response(stored, outcome.images, format) } };
    } catch (error) {
      const timedOut = signal.aborted;
      log.warn({ err: error, timedOut }, "job failed");
      const message = timedOut
        ? `The job did not finish within ${Math.round(this.deps.config.jobTimeoutMs / 1000)} seconds`
        : "The model failed the job";
      return await this.#fail(ids, message, true);
    } finally {
      slot.release();
    }
  }

  async #generate(spec: JobSpec, signal: AbortSignal): Promise<ProviderOutcome> {
    return generateWithSandbox({ prompt: spec.prompt, width: spec.size.width, height: spec.size.height, n: spec.n, signal });
  }

  async #fail(ids: BillingEventIds, message: string, shouldRetry: boolean): Promise<CreateImageReply> {
    await recordJobFailure(this.deps.db, ids, ErrorCode.ASYNC_IMAGE_FAILED, message);
    this.deps.relay.poke();
    return refused(refusal(ErrorCode.ASYNC_IMAGE_FAILED, message, { shouldRetry }) as Refusal);
  }

  async #store(spec: JobSpec, images: Buffer[]): Promise<StoredImage[]> {
    const expiresAt = new Date(Date.now() + this.deps.config.urlTtlSeconds * 1000);
    return Promise.all(
      images.map(async (bytes) => {
        const imageId = newId("img", 16);
        await this.deps.store.put(imageId, bytes, "image/png");
        return { imageId, contentType: "image/png", width: spec.size.width, height: spec.size.height, bytes: bytes.length, expiresAt };
      }),
    );
  }

  #response(stored: StoredImage[], images: Buffer[], format: ResponseFormat) {
    return {
      createdUnix: BigInt(Math.floor(Date.now() / 1000)),
      data: stored.map((image, index) => ({
        width: image.width,
        height: image.height,
        content:
          format === ResponseFormat.B64_JSON
            ? { case: "b64Json" as const, value: images[index]!.toString("base64") }
            : { case: "urlPath" as const, value: signImagePath(image.imageId, Math.floor(image.expiresAt.getTime() / 1000), this.deps.config.urlSigningSecret) },
      })),
    };
  }
}
