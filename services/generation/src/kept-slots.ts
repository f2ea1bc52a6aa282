// Channel slots kept between jobs (docs/architecture.md#channel-capacity-and-circuit-breakers):
// a shared slot whose call succeeded goes to the next job this process runs on that
// channel instead of back to PostgreSQL, so that job asks billing for its hold with no
// take statement beside it. A kept slot stays a row in generation.channel_slots, so
// the channel's capacity over every replica still holds; what a keeper skips is the
// take's look at the channel, so a slot is kept only while that look is recent and
// found plenty of room.

/** How long what a take learned (breaker closed, room left) lets its slot serve further jobs, by default (GENERATION_KEPT_SLOT_MAX_AGE_MS; 0 keeps none). */
export const KEPT_SLOT_MAX_AGE_MS = 1_000;
/** Channels smaller than this keep no slots: each slot is too large a share of them to sit idle. */
export const KEEPING_MIN_CAPACITY = 16;
/** At most this many idle slots per channel and process, and never more than a sixteenth of its capacity. */
const MAX_KEPT_PER_CHANNEL = 8;

/** A shared slot as its take gave it: when, and the free slots the channel had left then. */
export interface TakenSlot {
  slotId: string;
  /** `<model>/<channel>` */
  key: string;
  /** performance.now() at the take. */
  takenAt: number;
  roomLeft: number;
}

const keptAtMost = (capacity: number) => Math.min(MAX_KEPT_PER_CHANNEL, Math.floor(capacity / KEEPING_MIN_CAPACITY));

/**
 * May a slot whose call succeeded be kept for the next job? Only on a channel of at least
 * KEEPING_MIN_CAPACITY, within maxAgeMs of its take, when that take left at least a
 * quarter of the channel free, and below the per-channel cap: a channel that is filling
 * up, or whose breaker another replica may have opened since, gets its slots back at
 * once and each job takes its own.
 */
export function mayKeepSlot(slot: TakenSlot, capacity: number, keptNow: number, now: number, maxAgeMs: number): boolean {
  return now - slot.takenAt < maxAgeMs && slot.roomLeft * 4 >= capacity && keptNow < keptAtMost(capacity);
}

/**
 * The idle slots this process keeps, per channel. Slots are handed out while fresh;
 * stale ones, a channel's after a failure, and all at close go to `giveBack`, which
 * deletes their rows.
 */
export class KeptSlots {
  readonly #idle = new Map<string, TakenSlot[]>();
  #sweep: NodeJS.Timeout | undefined;

  constructor(
    private readonly giveBack: (slots: TakenSlot[]) => void,
    private readonly maxAgeMs: number = KEPT_SLOT_MAX_AGE_MS,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** mayKeepSlot with this pool's age limit and the channel's idle slots now. */
  mayKeep(slot: TakenSlot, capacity: number): boolean {
    return mayKeepSlot(slot, capacity, this.count(slot.key), this.now(), this.maxAgeMs);
  }

  count(key: string): number {
    return this.#idle.get(key)?.length ?? 0;
  }

  /** True when `reuse(key)` would hand out a slot now. */
  hasFresh(key: string): boolean {
    const now = this.now();
    return this.#idle.get(key)?.some((slot) => now - slot.takenAt < this.maxAgeMs) ?? false;
  }

  /** A fresh kept slot of the channel, no longer idle; null when there is none. Stale ones go back. */
  reuse(key: string): TakenSlot | null {
    const idle = this.#idle.get(key);
    if (!idle) return null;
    const now = this.now();
    const fresh = idle.findIndex((slot) => now - slot.takenAt < this.maxAgeMs);
    const slot = fresh === -1 ? null : idle.splice(fresh, 1)[0]!;
    this.#giveBackStale(key, now);
    return slot;
  }

  /** Keeps a slot whose job has ended (mayKeepSlot said so); one over the channel's cap goes back. */
  keep(slot: TakenSlot, capacity: number): void {
    const idle = this.#idle.get(slot.key) ?? [];
    if (idle.length >= keptAtMost(capacity)) {
      this.giveBack([slot]);
      return;
    }
    idle.push(slot);
    this.#idle.set(slot.key, idle);
    this.#sweepLater();
  }

  /** A call on the channel failed: its idle slots go back, so the next job's take consults the breaker. */
  giveBackChannel(key: string): void {
    const idle = this.#idle.get(key);
    if (!idle) return;
    this.#idle.delete(key);
    this.giveBack(idle);
  }

  /** Every idle slot, to be given back at shutdown; nothing is kept after this. */
  close(): TakenSlot[] {
    clearTimeout(this.#sweep);
    this.#sweep = undefined;
    const all = [...this.#idle.values()].flat();
    this.#idle.clear();
    return all;
  }

  #giveBackStale(key: string, now: number): void {
    const idle = this.#idle.get(key);
    if (!idle) return;
    const stale = idle.filter((slot) => now - slot.takenAt >= this.maxAgeMs);
    const fresh = idle.filter((slot) => now - slot.takenAt < this.maxAgeMs);
    if (fresh.length > 0) this.#idle.set(key, fresh);
    else this.#idle.delete(key);
    if (stale.length > 0) this.giveBack(stale);
  }

  /** Idle slots go back once stale, whether or not another job asks for their channel. */
  #sweepLater(): void {
    if (this.#sweep) return;
    const oldest = Math.min(...[...this.#idle.values()].flat().map((slot) => slot.takenAt));
    this.#sweep = setTimeout(() => {
      this.#sweep = undefined;
      const now = this.now();
      for (const key of [...this.#idle.keys()]) this.#giveBackStale(key, now);
      if (this.#idle.size > 0) this.#sweepLater();
    }, Math.max(1, oldest + this.maxAgeMs - this.now()));
    this.#sweep.unref();
  }
}
