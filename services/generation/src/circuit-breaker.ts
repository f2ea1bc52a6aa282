// One breaker per channel. After `failureThreshold` consecutive upstream failures it opens:
// the channel is skipped for `cooldownMs`, so requests go straight to healthier channels
// instead of waiting on a broken one. Then it is half-open: one trial job may use it; a
// success closes it, a failure opens it for another cool-down. A refusal is an answer,
// not a failure: it counts as a success here.

export type BreakerState = "closed" | "open" | "half-open";

export interface BreakerOptions {
  failureThreshold: number;
  cooldownMs: number;
  now?: () => number;
}

/** A permission to call the channel once; settle it with the call's result. */
export interface BreakerPass {
  succeeded(): void;
  failed(): void;
  /** The call never happened (billing refused, say): the breaker learns nothing. */
  cancel(): void;
}

export class CircuitBreaker {
  #failures = 0;
  #openedUntil = 0;
  #trialInFlight = false;
  readonly #now: () => number;

  constructor(private readonly options: BreakerOptions) {
    this.#now = options.now ?? Date.now;
  }

  get state(): BreakerState {
    if (this.#failures < this.options.failureThreshold) return "closed";
    return this.#now() < this.#openedUntil ? "open" : "half-open";
  }

  /** /v1/models and the console show a channel as unhealthy while its breaker is open. */
  get healthy(): boolean {
    return this.state !== "open";
  }

  get consecutiveFailures(): number {
    return this.#failures;
  }

  /** Milliseconds until an open breaker lets a trial through (0 when not open). */
  get retryInMs(): number {
    return this.state === "open" ? this.#openedUntil - this.#now() : 0;
  }

  /**
   * Asks to send a job through this channel. Closed: yes. Open: no. Half-open: yes for
   * exactly one job at a time, whose result decides. The returned token must be settled.
   */
  tryPass(): BreakerPass | null {
    const state = this.state;
    if (state === "open") return null;
    const trial = state === "half-open";
    if (trial) {
      if (this.#trialInFlight) return null;
      this.#trialInFlight = true;
    }
    let settled = false;
    const settle = (result: "ok" | "failed" | "cancelled") => {
      if (settled) return;
      settled = true;
      if (trial) this.#trialInFlight = false;
      if (result === "ok") this.#failures = 0;
      else if (result === "failed") this.#recordFailure();
    };
    return { succeeded: () => settle("ok"), failed: () => settle("failed"), cancel: () => settle("cancelled") };
  }

  #recordFailure(): void {
    this.#failures += 1;
    if (this.#failures >= this.options.failureThreshold) this.#openedUntil = this.#now() + this.options.cooldownMs;
  }
}
