import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import type { Tier } from "@orvado/proto";
import { SharedCalls, type Logger } from "@orvado/core";
import type { Db } from "@orvado/db";
import { channelKey, resolveChannelKeys, type Catalog, type CatalogModel, type ChannelConfig } from "./catalog.ts";
import { readSharedStates, recordChannelFailure, releaseSharedSlot, renewSharedSlots, takeSharedSlots, type BreakerSettings, type BreakerState, type ReleasedCall, type SharedTake } from "./channel-slots.ts";

// Per-channel concurrency: a slot is taken before anything is reserved, so a
// request refused for capacity holds and charges nothing.
//
// An upstream channel's capacity and circuit breaker are shared by every
// generation replica (channel-slots.ts, sql/functions/take_channel_slots.sql): its
// `capacity` bounds the jobs running on it across all of them, which is what
// a provider's concurrency quota counts. The sandbox renders inside each
// process, on that process's CPU, so its capacity is counted per process.

/** A counter of slots in this process's jobs: the sandbox's limit, and the metrics' count of shared slots its running jobs hold. */
export class ChannelCapacity {
  #inUse = 0;
  constructor(readonly limit: number) {}

  get inUse(): number {
    return this.#inUse;
  }

  /** Takes a slot if one is free; the returned function gives it back (once). */
  tryAcquire(): (() => void) | null {
    if (this.#inUse >= this.limit) return null;
    return this.hold();
  }

  /** Counts a slot whose limit is enforced elsewhere (PostgreSQL, for upstream channels). */
  hold(): () => void {
    this.#inUse += 1;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#inUse -= 1;
    };
  }
}

/** A slot's call as its job reports it: the first of succeeded/failed counts, none is a cancelled call. */
function firstVerdict() {
  const verdict = {
    call: { outcome: "cancelled" } as ReleasedCall,
    succeeded() {
      if (verdict.call.outcome === "cancelled") verdict.call = { outcome: "succeeded" };
    },
    failed(detail: string) {
      if (verdict.call.outcome === "cancelled") verdict.call = { outcome: "failed", detail };
    },
  };
  return verdict;
}

/** A channel slot held by one job. */
export interface ChannelSlot {
  channel: ChannelConfig;
  key: string;
  apiKey: string | undefined;
  /** The upstream answered (images or a refusal): the breaker closes. The first of succeeded/failed counts. */
  succeeded(): void;
  /** The call failed (`detail`: the upstream's cause, kept as the channel's last failure): the breaker counts it. */
  failed(detail: string): void;
  /** Gives the slot back with the outcome recorded (none: cancelled). Never throws; safe to call twice. */
  release(): Promise<void>;
  /**
   * A shared slot whose call succeeded: what the job's success statement deletes, so that
   * the slot goes back in that statement instead of one of its own (job-store.ts); null
   * when the slot must be released on its own.
   */
  handOff(): SlotHandOff | null;
  /** The statement that carried handOff() committed: the job no longer holds the slot, and release() does nothing more. */
  handedOff(): void;
}

/** A shared slot given back inside another statement, with its call's success. */
export interface SlotHandOff {
  slotId: string;
  channelKey: string;
}

export type SlotAnswer = { ok: true; slot: ChannelSlot } | { ok: false; reason: "full" | "unhealthy"; retryAfterSeconds: number };

export interface ChannelHealth {
  name: string;
  provider: string;
  healthy: boolean;
  state: BreakerState;
  /** Jobs on the channel now: across every replica, or in this process for the sandbox. */
  inUse: number;
  capacity: number;
  priority: number;
}

export interface ChannelPoolOptions extends BreakerSettings {
  readKey: (variable: string) => string | undefined;
  /** A lease not renewed for this long stops counting (a process killed with -9). */
  leaseTtlMs: number;
  /** How often this process renews every lease it holds, in one statement. */
  leaseRenewMs: number;
  logger: Logger;
}

const isShared = (channel: ChannelConfig) => channel.provider !== "sandbox";

/** The channels of a run asked about together, as one key. */
const runKeyOf = (model: CatalogModel, run: ChannelConfig[]) => run.map((channel) => channelKey(model.id, channel.name)).join("\n");

/**
 * Every channel of the catalog with its capacity, its circuit breaker and its key. Channels
 * are tried in priority order; one whose breaker is open is skipped. The sandbox renders
 * locally and only fails when a prompt asks it to, so it has no breaker.
 */
export class ChannelPool {
  /** Slots held by this process per `<model>/<channel>` (the limit is enforced here only for the sandbox). */
  readonly capacities = new Map<string, ChannelCapacity>();
  readonly #keys: Map<string, string | undefined>;
  /** This process's name on its leases. */
  readonly holder = `${hostname()}/${process.pid}/${randomUUID().slice(0, 8)}`;
  /** Shared slots held here, renewed together every leaseRenewMs while there are any. */
  readonly #held = new Set<string>();
  #renewTimer: NodeJS.Timeout | undefined;
  /**
   * Per run of channels asked about together: the takes of jobs arriving while one
   * is in flight go in the next statement together, which locks each channel's row
   * and counts its slots once for all of them.
   */
  readonly #takes = new Map<string, SharedCalls<string, SharedTake>>();

  constructor(
    private readonly catalog: Catalog,
    private readonly db: Db,
    private readonly options: ChannelPoolOptions,
  ) {
    this.#keys = resolveChannelKeys(catalog, options.readKey);
    for (const model of catalog.values()) {
      for (const channel of model.channels) this.capacities.set(channelKey(model.id, channel.name), new ChannelCapacity(channel.capacity));
    }
  }

  /**
   * The first channel by priority that serves the tier, is not excluded, lets a job through its
   * breaker and has a free slot. Consecutive upstream channels are asked about in one statement.
   * Throws when PostgreSQL cannot be asked.
   */
  async take(model: CatalogModel, tier: Tier, exclude: ReadonlySet<string> = new Set()): Promise<SlotAnswer> {
    const candidates = this.#candidates(model, tier, exclude);
    let sawFull = false;
    let soonestRetryMs = Number.POSITIVE_INFINITY;
    for (let start = 0; start < candidates.length; ) {
      if (!isShared(candidates[start]!)) {
        const slot = this.#takeLocal(model, candidates[start]!);
        if (slot) return { ok: true, slot };
        sawFull = true;
        start += 1;
        continue;
      }
      let end = start;
      while (end < candidates.length && isShared(candidates[end]!)) end += 1;
      const run = candidates.slice(start, end);
      start = end;
      const taken = await this.#takeShared(model, run);
      if (taken.ok) return taken;
      if (taken.reason === "full") sawFull = true;
      else soonestRetryMs = Math.min(soonestRetryMs, taken.retryAfterSeconds * 1000);
    }
    if (sawFull || !Number.isFinite(soonestRetryMs)) return { ok: false, reason: "full", retryAfterSeconds: 60 };
    return { ok: false, reason: "unhealthy", retryAfterSeconds: Math.min(60, Math.max(1, Math.ceil(soonestRetryMs / 1000))) };
  }

  #candidates(model: CatalogModel, tier: Tier, exclude: ReadonlySet<string>): ChannelConfig[] {
    return model.channels.filter((channel) => channel.tiers.includes(tier) && !exclude.has(channelKey(model.id, channel.name)));
  }

  /** Every channel of the catalog, keyed `<model>/<channel>`, as every replica sees it (one query). */
  async health(): Promise<Map<string, ChannelHealth>> {
    const sharedKeys = [...this.catalog.values()].flatMap((model) => model.channels.filter(isShared).map((channel) => channelKey(model.id, channel.name)));
    const shared = await readSharedStates(this.db, sharedKeys, this.options.failureThreshold);
    const health = new Map<string, ChannelHealth>();
    for (const model of this.catalog.values()) {
      for (const channel of model.channels) {
        const key = channelKey(model.id, channel.name);
        const state = shared.get(key)?.state ?? "closed";
        health.set(key, {
          name: channel.name,
          provider: channel.provider,
          healthy: state !== "open",
          state,
          inUse: shared.get(key)?.inUse ?? this.capacities.get(key)!.inUse,
          capacity: channel.capacity,
          priority: channel.priority,
        });
      }
    }
    return health;
  }

  #takeLocal(model: CatalogModel, channel: ChannelConfig): ChannelSlot | null {
    const key = channelKey(model.id, channel.name);
    const release = this.capacities.get(key)!.tryAcquire();
    if (!release) return null;
    const verdict = firstVerdict();
    let released = false;
    return {
      channel,
      key,
      apiKey: this.#keys.get(key),
      succeeded: verdict.succeeded,
      failed: verdict.failed,
      release: async () => {
        if (released) return;
        released = true;
        release();
        const { call } = verdict;
        if (call.outcome === "failed") await this.#noteFailure(key, call.detail);
      },
      handOff: () => null,
      handedOff() {},
    };
  }

  async #takeShared(model: CatalogModel, run: ChannelConfig[]): Promise<SlotAnswer> {
    const slotId = randomUUID();
    const byKey = new Map(run.map((channel) => [channelKey(model.id, channel.name), channel]));
    const taken = await this.#takesFor(runKeyOf(model, run), byKey).call(slotId);
    if (!taken.ok) return { ok: false, reason: taken.reason, retryAfterSeconds: Math.ceil(taken.retryAfterMs / 1000) };
    this.#held.add(slotId);
    this.#renewWhileHeld();
    return { ok: true, slot: this.#sharedSlot(slotId, taken.channelKey, byKey.get(taken.channelKey)!) };
  }

  /** The job's handle on the shared slot it took. */
  #sharedSlot(slotId: string, key: string, channel: ChannelConfig): ChannelSlot {
    const countHere = this.capacities.get(key)!.hold();
    const verdict = firstVerdict();
    let released: Promise<void> | undefined;
    const pool = this;
    return {
      channel,
      key,
      apiKey: this.#keys.get(key),
      succeeded: verdict.succeeded,
      failed: verdict.failed,
      release() {
        if (released) return released;
        released = pool.#releaseShared(slotId, key, verdict.call).finally(countHere);
        return released;
      },
      handOff() {
        if (verdict.call.outcome !== "succeeded" || released !== undefined) return null;
        return { slotId, channelKey: key };
      },
      handedOff() {
        if (released) return;
        released = Promise.resolve();
        countHere();
        pool.#held.delete(slotId);
      },
    };
  }

  #takesFor(runKey: string, byKey: Map<string, ChannelConfig>): SharedCalls<string, SharedTake> {
    let takes = this.#takes.get(runKey);
    if (!takes) {
      const channels = [...byKey].map(([key, channel]) => ({ key, capacity: channel.capacity }));
      takes = new SharedCalls((slotIds) =>
        takeSharedSlots(this.db, { slotIds, holder: this.holder, channels, failureThreshold: this.options.failureThreshold, leaseTtlMs: this.options.leaseTtlMs }),
      );
      this.#takes.set(runKey, takes);
    }
    return takes;
  }

  async #releaseShared(slotId: string, key: string, call: ReleasedCall): Promise<void> {
    // Renewals stop first: should the release fail, the lease expires by itself within leaseTtlMs.
    this.#held.delete(slotId);
    try {
      const opened = await releaseSharedSlot(this.db, slotId, key, call, this.options);
      if (opened) this.#reportOpened(key, call);
    } catch (error) {
      this.options.logger.warn({ err: error, channel: key, outcome: call.outcome }, "could not release a channel slot; its lease expires by itself");
    }
  }

  /** Logged once per opening, by the replica whose failure opened it: the channel is out of rotation until its cool-down ends. */
  #reportOpened(key: string, call: ReleasedCall): void {
    const { failureThreshold, cooldownMs } = this.options;
    const detail = call.outcome === "failed" ? call.detail : undefined;
    this.options.logger.warn({ channel: key, failureThreshold, cooldownMs, detail }, "channel breaker opened: no job goes to this channel until one trial after the cool-down succeeds");
  }

  /** A failure on a channel without a shared slot: only its cause is kept; losing that note loses nothing else. */
  async #noteFailure(key: string, detail: string): Promise<void> {
    await recordChannelFailure(this.db, key, detail).catch((error: unknown) => this.options.logger.warn({ err: error, channel: key }, "could not record the channel's failure cause"));
  }

  /** One timer renews every lease held here; it runs only while this process holds some. */
  #renewWhileHeld(): void {
    if (this.#renewTimer) return;
    this.#renewTimer = setInterval(() => {
      if (this.#held.size === 0) {
        clearInterval(this.#renewTimer);
        this.#renewTimer = undefined;
        return;
      }
      renewSharedSlots(this.db, [...this.#held], this.options.leaseTtlMs).catch((error: unknown) =>
        this.options.logger.warn({ err: error, slots: this.#held.size }, "could not renew channel slot leases; they expire unless a later renewal succeeds"),
      );
    }, this.options.leaseRenewMs);
    this.#renewTimer.unref();
  }
}
