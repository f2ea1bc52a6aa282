import type { Tier } from "@orvado/proto";
import { channelKey, resolveChannelKeys, type Catalog, type CatalogModel, type ChannelConfig } from "./catalog.ts";
import { CircuitBreaker, type BreakerPass, type BreakerState } from "./circuit-breaker.ts";

// Per-channel concurrency: a slot is taken before anything is reserved, so a
// request refused for capacity holds and charges nothing.

export class ChannelCapacity {
  #inUse = 0;
  constructor(readonly limit: number) {}

  get inUse(): number {
    return this.#inUse;
  }

  /** Takes a slot if one is free; the returned function gives it back (once). */
  tryAcquire(): (() => void) | null {
    if (this.#inUse >= this.limit) return null;
    this.#inUse += 1;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#inUse -= 1;
    };
  }
}

/** A channel slot held by one job: capacity plus the breaker's permission. */
export interface ChannelSlot {
  channel: ChannelConfig;
  key: string;
  apiKey: string | undefined;
  pass: BreakerPass;
  /** Gives the slot back; a pass not yet settled is cancelled. Safe to call twice. */
  release(): void;
}

export type SlotAnswer = { ok: true; slot: ChannelSlot } | { ok: false; reason: "full" | "unhealthy"; retryAfterSeconds: number };

export interface ChannelHealth {
  name: string;
  provider: string;
  healthy: boolean;
  state: BreakerState;
  inUse: number;
  capacity: number;
  priority: number;
}

/**
 * Every channel of the catalog with its capacity, its circuit breaker and its key. Channels
 * are tried in priority order; one whose breaker is open is skipped. The sandbox renders
 * locally and only fails when a prompt asks it to, so it has no breaker.
 */
export class ChannelPool {
  readonly capacities = new Map<string, ChannelCapacity>();
  readonly breakers = new Map<string, CircuitBreaker>();
  readonly #keys: Map<string, string | undefined>;

  constructor(
    private readonly catalog: Catalog,
    options: { failureThreshold: number; cooldownMs: number; readKey: (variable: string) => string | undefined; now?: () => number },
  ) {
    this.#keys = resolveChannelKeys(catalog, options.readKey);
    for (const model of catalog.values()) {
      for (const channel of model.channels) {
        const key = channelKey(model.id, channel.name);
        this.capacities.set(key, new ChannelCapacity(channel.capacity));
        if (channel.provider !== "sandbox") this.breakers.set(key, new CircuitBreaker(options));
      }
    }
  }

  /** The first channel by priority that serves the tier, is not excluded, is healthy and has a free slot. */
  take(model: CatalogModel, tier: Tier, exclude: ReadonlySet<string> = new Set()): SlotAnswer {
    let sawFull = false;
    let soonestRetryMs = Number.POSITIVE_INFINITY;
    for (const channel of model.channels) {
      const key = channelKey(model.id, channel.name);
      if (exclude.has(key) || !channel.tiers.includes(tier)) continue;
      const breaker = this.breakers.get(key);
      if (breaker?.state === "open") {
        soonestRetryMs = Math.min(soonestRetryMs, breaker.retryInMs);
        continue;
      }
      const release = this.capacities.get(key)!.tryAcquire();
      if (!release) {
        sawFull = true;
        continue;
      }
      const pass = breaker ? breaker.tryPass() : ALWAYS_PASS;
      if (!pass) {
        // Half-open and its one trial is already running: treat as busy.
        release();
        sawFull = true;
        continue;
      }
      return {
        ok: true,
        slot: {
          channel,
          key,
          apiKey: this.#keys.get(key),
          pass,
          release() {
            pass.cancel();
            release();
          },
        },
      };
    }
    if (sawFull || !Number.isFinite(soonestRetryMs)) return { ok: false, reason: "full", retryAfterSeconds: 60 };
    return { ok: false, reason: "unhealthy", retryAfterSeconds: Math.min(60, Math.max(1, Math.ceil(soonestRetryMs / 1000))) };
  }

  health(model: CatalogModel): ChannelHealth[] {
    return model.channels.map((channel) => {
      const key = channelKey(model.id, channel.name);
      const breaker = this.breakers.get(key);
      const capacity = this.capacities.get(key)!;
      return {
        name: channel.name,
        provider: channel.provider,
        healthy: breaker?.healthy ?? true,
        state: breaker?.state ?? "closed",
        inUse: capacity.inUse,
        capacity: capacity.limit,
        priority: channel.priority,
      };
    });
  }
}

const ALWAYS_PASS: BreakerPass = { succeeded() {}, failed() {}, cancel() {} };
