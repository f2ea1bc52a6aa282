/**
 * Writes of one kind from concurrent jobs, shared: while one write is in flight,
 * the items that come meanwhile wait and go together in the next. One job at a
 * time is one write each, as without it; at 100 connections one database round
 * trip (and one PostgreSQL wake-up, and for a durable write one commit) carries
 * many jobs' rows. An item the database refuses fails only its own caller: a
 * failed batch is written again item by item.
 */
export class SharedWrites<T> {
  readonly #waiting: { item: T; resolve: () => void; reject: (error: unknown) => void }[] = [];
  #writing = false;

  constructor(
    private readonly write: (items: T[]) => Promise<void>,
    private readonly maxPerWrite = 500,
  ) {}

  add(item: T): Promise<void> {
    return new Promise((resolve, reject) => {
      this.#waiting.push({ item, resolve, reject });
      if (!this.#writing) void this.#drain();
    });
  }

  async #drain(): Promise<void> {
    this.#writing = true;
    while (this.#waiting.length > 0) {
      const batch = this.#waiting.splice(0, this.maxPerWrite);
      try {
        await this.write(batch.map((entry) => entry.item));
        for (const entry of batch) entry.resolve();
      } catch (error) {
        if (batch.length === 1) batch[0]!.reject(error);
        else for (const entry of batch) await this.write([entry.item]).then(entry.resolve, entry.reject);
      }
    }
    this.#writing = false;
  }
}
