// Channel slots kept between jobs (docs/architecture.md#decisions, "A channel's capacity and circuit breaker are kept in PostgreSQL"):
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
  /** Per channel, when a call on it last failed here: a slot taken before that is neither kept nor reused. */
  readonly #lastFailure = new Map<string, number>();
  /**
   * Per channel, slots promised a place (mayKeep said yes) whose success statements are still
   * running. They count against the cap: at 100 connections a statement carries dozens of
   * successes at once, and each asking before any is kept had each been told yes, then sent
   * back one statement each.
   */
  readonly #promised = new Map<string, number>();
  #sweep: NodeJS.Timeout | undefined;
  #sweepAt = Number.POSITIVE_INFINITY;
  #closed = false;

  constructor(
    private readonly giveBack: (slots: TakenSlot[]) => void,
    private readonly maxAgeMs: number = KEPT_SLOT_MAX_AGE_MS,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /**
   * mayKeepSlot with this pool's age limit and the channel's idle and promised slots; never for a
   * slot taken before the channel's last failure here, nor once closed. A yes is a promise: keep()
   * or withdraw() follows it.
   */
  mayKeep(slot: TakenSlot, capacity: number): boolean {
    const promised = this.#promised.get(slot.key) ?? 0;
    const now = this.now();
    const yes = !this.#closed && this.#usable(slot, now) && mayKeepSlot(slot, capacity, this.count(slot.key) + promised, now, this.maxAgeMs);
    if (yes) this.#promised.set(slot.key, promised + 1);
    return yes;
  }

  /** The success statement of a slot mayKeep promised a place failed: the place is free again (the job releases the slot itself). */
  withdraw(key: string): void {
    const promised = (this.#promised.get(key) ?? 0) - 1;
    if (promised > 0) this.#promised.set(key, promised);
    else this.#promised.delete(key);
  }

  count(key: string): number {
    return this.#idle.get(key)?.length ?? 0;
  }

  /** True when `reuse(key)` would hand out a slot now. */
  hasFresh(key: string): boolean {
    const now = this.now();
    return this.#idle.get(key)?.some((slot) => this.#usable(slot, now)) ?? false;
  }

  /** A fresh kept slot of the channel, no longer idle; null when there is none. Stale ones go back. */
  reuse(key: string): TakenSlot | null {
    const idle = this.#idle.get(key);
    if (!idle) return null;
    const now = this.now();
    const fresh = idle.findIndex((slot) => this.#usable(slot, now));
    const slot = fresh === -1 ? null : idle.splice(fresh, 1)[0]!;
    this.#giveBackStale(key, now);
    return slot;
  }

  /**
   * Keeps a slot whose job has ended (mayKeep said so when its success statement was
   * sent). What changed while that statement ran sends it back instead: the pool was
   * closed, the channel's cap was reached, a call on the channel failed, or the slot
   * grew stale.
   */
  keep(slot: TakenSlot, capacity: number): void {
    this.withdraw(slot.key);
    const idle = this.#idle.get(slot.key) ?? [];
    if (this.#closed || idle.length >= keptAtMost(capacity) || !this.#usable(slot, this.now())) {
      this.giveBack([slot]);
      return;
    }
    idle.push(slot);
    this.#idle.set(slot.key, idle);
    this.#sweepBy(slot.takenAt + this.maxAgeMs);
  }

  /**
   * A call on the channel failed here: its idle slots go back at once, and no slot taken
   * before now is kept or reused, so the next job's take consults the breaker.
   */
  failedOn(key: string): void {
    this.#lastFailure.set(key, this.now());
    const idle = this.#idle.get(key);
    if (!idle) return;
    this.#idle.delete(key);
    this.giveBack(idle);
  }

  /** Every idle slot, to be given back at shutdown; nothing is kept after this. */
  close(): TakenSlot[] {
    this.#closed = true;
    clearTimeout(this.#sweep);
    this.#sweep = undefined;
    this.#sweepAt = Number.POSITIVE_INFINITY;
    const all = [...this.#idle.values()].flat();
    this.#idle.clear();
    return all;
  }

  /** Fresh, and taken after the channel's last failure here. */
  #usable(slot: TakenSlot, now: number): boolean {
    return now - slot.takenAt < this.maxAgeMs && slot.takenAt > (this.#lastFailure.get(slot.key) ?? Number.NEGATIVE_INFINITY);
  }

  #giveBackStale(key: string, now: number): void {
    const idle = this.#idle.get(key);
    if (!idle) return;
    const stale: TakenSlot[] = [];
    const fresh: TakenSlot[] = [];
    for (const slot of idle) (this.#usable(slot, now) ? fresh : stale).push(slot);
    if (fresh.length > 0) this.#idle.set(key, fresh);
    else this.#idle.delete(key);
    if (stale.length > 0) this.giveBack(stale);
  }

  /** Idle slots go back once stale, whether or not another job asks for their channel: the sweep runs by `at` at the latest. */
  #sweepBy(at: number): void {
    if (this.#sweep && this.#sweepAt <= at) return;
    clearTimeout(this.#sweep);
    this.#sweepAt = at;
    this.#sweep = setTimeout(() => {
      this.#sweep = undefined;
      this.#sweepAt = Number.POSITIVE_INFINITY;
      const now = this.now();
      for (const key of [...this.#idle.keys()]) this.#giveBackStale(key, now);
      const left = [...this.#idle.values()].flat();
      if (left.length > 0) this.#sweepBy(Math.min(...left.map((slot) => slot.takenAt)) + this.maxAgeMs);
    }, Math.max(1, at - this.now()));
    this.#sweep.unref();
  }
}
