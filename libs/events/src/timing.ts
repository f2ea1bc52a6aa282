// Waiting primitives for the consumer and relay loops: a sleep that a
// notification can cut short, and the retry backoff.

/**
 * A sleep that ring() ends early. A ring that comes while nobody sleeps is
 * remembered, so a wake-up between "found nothing" and "go to sleep" is not lost.
 */
export class Alarm {
  #rung = false;
  #wake: (() => void) | null = null;

  ring(): void {
    this.#rung = true;
    this.#wake?.();
  }

  async sleep(ms: number): Promise<void> {
    if (!this.#rung) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, ms);
        this.#wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
    this.#wake = null;
    this.#rung = false;
  }
}

/**
 * How long a relay or consumer, once woken, waits before its round, so that one
 * round carries the events of many requests. Settlement is behind the client's
 * answer, so no client waits for it; a cost record reads `pending` that much
 * longer. Each round is several statements and wake-ups on the cores the next
 * requests need: a longer linger than a few ms lowered the one-connection p50 and
 * raised throughput at 100 connections (docs/design-choices.md#outbox-and-consumers-in-batches).
 */
export const DEFAULT_LINGER_MS = 100;

/** Sleeps until rung (or pollMs), then lingers, cut short by `until` (stop). */
export async function sleepThenLinger(alarm: Alarm, pollMs: number, lingerMs: number, until: Promise<unknown>): Promise<void> {
  await alarm.sleep(pollMs);
  if (lingerMs > 0) await delay(lingerMs, until);
}

/** Resolves after ms, or as soon as `until` settles (used to let stop() cut a backoff short). */
export async function delay(ms: number, until: Promise<unknown>): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([new Promise<void>((resolve) => (timer = setTimeout(resolve, ms))), until]);
  clearTimeout(timer);
}

/** Retry delays for a failing handler or publish: 100 ms doubling to 5 s. */
export class Backoff {
  #next: number;

  constructor(
    private readonly initialMs = 100,
    private readonly maxMs = 5_000,
  ) {
    this.#next = initialMs;
  }

  /** The delay to wait now; the one after is twice as long, up to the cap. */
  next(): number {
    const current = this.#next;
    this.#next = Math.min(current * 2, this.maxMs);
    return current;
  }

  reset(): void {
    this.#next = this.initialMs;
  }
}

export interface Deferred {
  promise: Promise<void>;
  resolve(): void;
}

export function deferred(): Deferred {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}
