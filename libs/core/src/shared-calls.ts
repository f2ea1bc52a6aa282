/**
 * Calls of one kind from concurrent requests, shared: while one call is in
 * flight, the items that come meanwhile wait and go together in the next, and
 * each caller gets its own item's result. One request at a time is one call
 * each, as without it; at 100 connections one database round trip (one
 * PostgreSQL wake-up, and for a durable write one commit) carries many
 * requests' rows. An item the call refuses fails only its own caller: a failed
 * batch is called again item by item. `run` must answer one result per item,
 * in the items' order.
 */
export class SharedCalls<I, O> {
  readonly #waiting: { item: I; resolve: (result: O) => void; reject: (error: unknown) => void }[] = [];
  #running = false;

  constructor(
    private readonly run: (items: I[]) => Promise<O[]>,
    private readonly maxPerCall = 500,
  ) {}

  call(item: I): Promise<O> {
    return new Promise((resolve, reject) => {
      this.#waiting.push({ item, resolve, reject });
      if (!this.#running) void this.#drain();
    });
  }

  /** Several items known at once: they share one call (up to maxPerCall), where call() in a loop sends the first alone. */
  callAll(items: I[]): Promise<O>[] {
    const results = items.map((item) => new Promise<O>((resolve, reject) => this.#waiting.push({ item, resolve, reject })));
    if (!this.#running && items.length > 0) void this.#drain();
    return results;
  }

  async #drain(): Promise<void> {
    this.#running = true;
    while (this.#waiting.length > 0) {
      const batch = this.#waiting.splice(0, this.maxPerCall);
      try {
        const results = await this.run(batch.map((entry) => entry.item));
        if (results.length !== batch.length) throw new Error(`a shared call answered ${results.length} results for ${batch.length} items`);
        batch.forEach((entry, index) => entry.resolve(results[index]!));
      } catch (error) {
        if (batch.length === 1) batch[0]!.reject(error);
        else for (const entry of batch) await this.run([entry.item]).then((results) => entry.resolve(results[0]!), entry.reject);
      }
    }
    this.#running = false;
  }
}
