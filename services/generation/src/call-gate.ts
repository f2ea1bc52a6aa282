/**
 * At most `limit` calls of one kind in flight; the rest wait in line, in order.
 * A burst of jobs waiting for billing then holds a queued callback each, not an
 * RPC each on both sides (a gRPC call in flight costs tens of kB in the caller
 * and in billing, and billing answers no faster for having thousands queued
 * behind its database pool).
 */
export class CallGate {
  #active = 0;
  readonly #waiting: (() => void)[] = [];

  constructor(private readonly limit: number) {
    if (!Number.isInteger(limit) || limit < 1) throw new Error(`a call gate needs a whole limit of at least 1 (got ${limit})`);
  }

  get waiting(): number {
    return this.#waiting.length;
  }

  async run<T>(call: () => Promise<T>): Promise<T> {
    if (this.#active >= this.limit) await new Promise<void>((resolve) => this.#waiting.push(resolve));
    else this.#active += 1;
    try {
      return await call();
    } finally {
      // The slot passes straight to the next in line, so the count never dips and lets a newcomer jump ahead.
      const next = this.#waiting.shift();
      if (next) next();
      else this.#active -= 1;
    }
  }
}
