import { afterEach, describe, expect, it, vi } from "vitest";
import { KEPT_SLOT_MAX_AGE_MS, KeptSlots, mayKeepSlot, type TakenSlot } from "./kept-slots.ts";

// The rule for keeping a channel slot between jobs and the idle pool, on a clock the
// test moves (no transport: plain objects). capacity.test.ts runs the same through
// ChannelPool against PostgreSQL.

const MAX = KEPT_SLOT_MAX_AGE_MS;
const slot = (slotId: string, takenAt: number, roomLeft = 60, key = "m/main"): TakenSlot => ({ slotId, key, takenAt, roomLeft });

describe("mayKeepSlot", () => {
  it("keeps a fresh slot of a channel with room, up to a sixteenth of its capacity and at most 8", () => {
    expect(mayKeepSlot(slot("a", 0), 64, 0, 10, MAX)).toBe(true);
    expect(mayKeepSlot(slot("a", 0), 64, 3, 10, MAX)).toBe(true);
    expect(mayKeepSlot(slot("a", 0), 64, 4, 10, MAX)).toBe(false);
    expect(mayKeepSlot(slot("a", 0, 90_000), 100_000, 7, 10, MAX)).toBe(true);
    expect(mayKeepSlot(slot("a", 0, 90_000), 100_000, 8, 10, MAX)).toBe(false);
  });

  it("keeps nothing on a channel under 16 slots, once its take is a second old, or when the take left less than a quarter free", () => {
    expect(mayKeepSlot(slot("a", 0, 15), 15, 0, 10, MAX)).toBe(false);
    expect(mayKeepSlot(slot("a", 0, 16), 16, 0, 10, MAX)).toBe(true);
    expect(mayKeepSlot(slot("a", 0), 64, 0, KEPT_SLOT_MAX_AGE_MS - 1, MAX)).toBe(true);
    expect(mayKeepSlot(slot("a", 0), 64, 0, KEPT_SLOT_MAX_AGE_MS, MAX)).toBe(false);
    // GENERATION_KEPT_SLOT_MAX_AGE_MS=0 keeps none.
    expect(mayKeepSlot(slot("a", 0), 64, 0, 0, 0)).toBe(false);
    expect(mayKeepSlot(slot("a", 0, 16), 64, 0, 10, MAX)).toBe(true);
    expect(mayKeepSlot(slot("a", 0, 15), 64, 0, 10, MAX)).toBe(false);
  });
});

describe("KeptSlots", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("hands a kept slot to one job only, and gives back the stale ones it finds", () => {
    let now = 0;
    const givenBack: string[] = [];
    const kept = new KeptSlots((slots) => givenBack.push(...slots.map((s) => s.slotId)), MAX, () => now);
    kept.keep(slot("old", 0), 64);
    now = 600;
    kept.keep(slot("new", 500), 64);
    now = KEPT_SLOT_MAX_AGE_MS + 1;
    expect(kept.hasFresh("m/main")).toBe(true);
    expect(kept.reuse("m/main")?.slotId).toBe("new");
    expect(givenBack).toEqual(["old"]);
    expect(kept.reuse("m/main")).toBeNull();
    expect(kept.hasFresh("m/main")).toBe(false);
    expect(kept.reuse("m/other")).toBeNull();
    kept.close();
  });

  it("gives back a slot over the channel's cap at once, a channel's slots after a failure, and every slot at close", () => {
    let now = 10;
    const givenBack: string[] = [];
    const kept = new KeptSlots((slots) => givenBack.push(...slots.map((s) => s.slotId)), MAX, () => now);
    for (const id of ["a", "b", "c"]) kept.keep(slot(id, 0), 32);
    expect(givenBack).toEqual(["c"]);
    expect(kept.count("m/main")).toBe(2);
    kept.keep(slot("x", 0, 60, "m/backup"), 64);
    now = 20;
    kept.failedOn("m/main");
    expect(givenBack).toEqual(["c", "a", "b"]);
    expect(kept.count("m/main")).toBe(0);
    // A slot taken before the failure, whose success statement was sent before it, goes back instead of being kept.
    expect(kept.mayKeep(slot("before", 15), 64)).toBe(false);
    kept.keep(slot("before", 15), 64);
    expect(givenBack).toEqual(["c", "a", "b", "before"]);
    expect(kept.mayKeep(slot("after", 25), 64)).toBe(true);
    kept.keep(slot("after", 25), 64);
    expect(kept.reuse("m/main")?.slotId).toBe("after");
    expect(kept.close().map((s) => s.slotId)).toEqual(["x"]);
    expect(kept.count("m/backup")).toBe(0);
    // Closed: nothing is kept any more, and a job ending now gives its slot back.
    expect(kept.mayKeep(slot("late", 30), 64)).toBe(false);
    kept.keep(slot("late", 30), 64);
    expect(givenBack.at(-1)).toBe("late");
    expect(kept.count("m/main")).toBe(0);
  });

  it("counts places promised to slots whose success statements still run against the cap, so a batch of successes keeps only what fits", () => {
    const givenBack: string[] = [];
    const kept = new KeptSlots((slots) => givenBack.push(...slots.map((s) => s.slotId)), MAX, () => 10);
    // 32 slots: two may be kept. Five successes ask before any statement has committed.
    const asked = ["a", "b", "c", "d", "e"].map((id) => kept.mayKeep(slot(id, 0), 32));
    expect(asked).toEqual([true, true, false, false, false]);
    // The first one's statement fails: its place is free for the next asking.
    kept.withdraw("m/main");
    expect(kept.mayKeep(slot("f", 0), 32)).toBe(true);
    kept.keep(slot("b", 0), 32);
    kept.keep(slot("f", 0), 32);
    expect(givenBack).toEqual([]);
    expect(kept.count("m/main")).toBe(2);
    expect(kept.mayKeep(slot("g", 0), 32)).toBe(false);
  });

  it("gives back at once a slot grown stale while its success statement ran", () => {
    const givenBack: string[] = [];
    const kept = new KeptSlots((slots) => givenBack.push(...slots.map((s) => s.slotId)), MAX, () => MAX + 5);
    kept.keep(slot("slow", 0), 64);
    expect(givenBack).toEqual(["slow"]);
    expect(kept.count("m/main")).toBe(0);
  });

  it("gives back idle slots once stale, though no job asks for their channel", () => {
    vi.useFakeTimers();
    let now = 0;
    const givenBack: string[] = [];
    const kept = new KeptSlots((slots) => givenBack.push(...slots.map((s) => s.slotId)), MAX, () => now);
    kept.keep(slot("first", 0), 64);
    now = 400;
    kept.keep(slot("second", 400), 64);
    now = KEPT_SLOT_MAX_AGE_MS;
    vi.advanceTimersByTime(KEPT_SLOT_MAX_AGE_MS);
    expect(givenBack).toEqual(["first"]);
    now = KEPT_SLOT_MAX_AGE_MS + 400;
    vi.advanceTimersByTime(400);
    expect(givenBack).toEqual(["first", "second"]);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("sweeps by the earliest deadline, also for an older slot kept after a younger one", () => {
    vi.useFakeTimers();
    let now = 0;
    const givenBack: string[] = [];
    const kept = new KeptSlots((slots) => givenBack.push(...slots.map((s) => s.slotId)), MAX, () => now);
    kept.keep(slot("young", 0), 64);
    now = 200;
    kept.keep(slot("older", -500), 64);
    now = MAX - 500;
    vi.advanceTimersByTime(MAX - 700);
    expect(givenBack).toEqual(["older"]);
    now = MAX;
    vi.advanceTimersByTime(500);
    expect(givenBack).toEqual(["older", "young"]);
    expect(vi.getTimerCount()).toBe(0);
  });
});
