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
