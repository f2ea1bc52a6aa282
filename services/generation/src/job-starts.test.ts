import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { SharedCalls } from "@orvado/core";
import { DeferredStarts, START_ROW_DELAY_MS } from "./job-starts.ts";
import type { JobStart } from "./job-store.ts";

// When a job's start row is written (job-starts.ts), on a clock the test moves and a
// writer that records what it is given (no transport; job-writes.test.ts runs the
// statements against PostgreSQL, and jobs.test.ts the whole job).

const start = (requestId: string, channel = "main"): JobStart =>
  ({ ids: { requestId, accountId: "acct", keyId: "key" }, spec: {} as JobStart["spec"], responseFormat: "URL", channel, startedAt: 0 }) as JobStart;

let now = 0;
let written: string[][];
let refuse: Set<string>;
let starts: DeferredStarts;

beforeEach(() => {
  vi.useFakeTimers();
  now = 0;
  written = [];
  refuse = new Set();
  const writer = new SharedCalls<JobStart, void>(async (batch) => {
    if (batch.some((row) => refuse.has(row.ids.requestId))) throw new Error("refused");
    written.push(batch.map((row) => `${row.ids.requestId}@${row.channel}`));
    return batch.map(() => undefined);
  });
  starts = new DeferredStarts(writer, START_ROW_DELAY_MS, () => now);
});

afterEach(() => {
  vi.useRealTimers();
});

async function advance(ms: number): Promise<void> {
  now += ms;
  await vi.advanceTimersByTimeAsync(ms);
}

describe("DeferredStarts", () => {
  it("writes no start row for a job that ends within the delay: the outcome's statement gets its start", async () => {
    const row = starts.begin(start("quick"));
    await advance(START_ROW_DELAY_MS - 200);
    expect(await row.end()).toMatchObject({ ids: { requestId: "quick" } });
    await advance(START_ROW_DELAY_MS);
    expect(written).toEqual([]);
    expect(starts.pending).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("writes the rows of jobs still running after the delay, those due within 100 ms together; their outcome then writes none", async () => {
    const first = starts.begin(start("a"));
    await advance(50);
    const second = starts.begin(start("b"));
    await advance(500);
    const third = starts.begin(start("c"));
    await advance(START_ROW_DELAY_MS - 550);
    expect(written).toEqual([["a@main", "b@main"]]);
    expect(await first.end()).toBeNull();
    expect(await second.end()).toBeNull();
    expect(starts.pending).toBe(1);
    await advance(550);
    expect(written.flat()).toContain("c@main");
    expect(await third.end()).toBeNull();
    expect(vi.getTimerCount()).toBe(0);
  });

  it("gives the same answer to a second end(), and rejects both when the row could not be written", async () => {
    const quick = starts.begin(start("quick"));
    const first = await quick.end();
    expect(await quick.end()).toBe(first);
    refuse.add("lost");
    const lost = starts.begin(start("lost"));
    await advance(START_ROW_DELAY_MS);
    await expect(lost.end()).rejects.toThrow("refused");
    await expect(lost.end()).rejects.toThrow("refused");
    expect(await lost.moveTo("backup", async () => {})).toBe(false);
  });

  it("moves a job that failed over: the row still to be written names the new channel; a written one is updated after its write", async () => {
    const early = starts.begin(start("early"));
    const updates: string[] = [];
    expect(await early.moveTo("backup", async () => void updates.push("early"))).toBe(true);
    expect(updates).toEqual([]);
    expect(await early.end()).toMatchObject({ channel: "backup" });

    const late = starts.begin(start("late"));
    await advance(START_ROW_DELAY_MS);
    expect(await late.moveTo("backup", async () => void updates.push("late"))).toBe(true);
    expect(written.flat()).toEqual(["late@main"]);
    expect(updates).toEqual(["late"]);
    expect(await late.end()).toBeNull();
  });
});
