import { describe, expect, it } from "vitest";
import { SharedCalls } from "./shared-calls.ts";

describe("SharedCalls", () => {
  it("calls with the first item at once and those that came meanwhile together, each getting its own result", async () => {
    const writes: number[][] = [];
    const shared = new SharedCalls<number, number>(async (items) => {
      writes.push(items);
      await new Promise((resolve) => setTimeout(resolve, 5));
      return items.map((item) => item * 10);
    });
    expect(await Promise.all([1, 2, 3, 4, 5].map((item) => shared.call(item)))).toEqual([10, 20, 30, 40, 50]);
    expect(writes).toEqual([[1], [2, 3, 4, 5]]);
    await shared.call(6);
    expect(writes.at(-1)).toEqual([6]);
  });

  it("sends items known at once (callAll) in one call, and those that come meanwhile in the next", async () => {
    const writes: number[][] = [];
    const shared = new SharedCalls<number, number>(async (items) => {
      writes.push(items);
      await new Promise((resolve) => setTimeout(resolve, 5));
      return items.map((item) => item * 10);
    });
    const together = shared.callAll([1, 2, 3]);
    const later = shared.call(4);
    expect(await Promise.all([...together, later])).toEqual([10, 20, 30, 40]);
    expect(writes).toEqual([[1, 2, 3], [4]]);
    expect(shared.callAll([])).toEqual([]);
  });

  it("splits a long line into calls of at most maxPerCall", async () => {
    const writes: number[][] = [];
    const shared = new SharedCalls<number, number>(async (items) => (writes.push(items), items), 2);
    await Promise.all([1, 2, 3, 4, 5].map((item) => shared.call(item)));
    expect(writes).toEqual([[1], [2, 3], [4, 5]]);
  });

  it("fails only the item the call refuses, by calling again item by item", async () => {
    const shared = new SharedCalls<number, number>(async (items) => {
      await new Promise((resolve) => setTimeout(resolve, 1));
      if (items.includes(3)) throw new Error("3 is refused");
      return items;
    });
    const results = await Promise.allSettled([1, 2, 3, 4].map((item) => shared.call(item)));
    expect(results.map((result) => result.status)).toEqual(["fulfilled", "fulfilled", "rejected", "fulfilled"]);
  });
});

describe("SharedCalls with a wrong answer", () => {
  it("refuses an answer with fewer results than items, and retries item by item", async () => {
    let calls = 0;
    const shared = new SharedCalls<number, number>(async (items) => {
      calls += 1;
      await new Promise((resolve) => setTimeout(resolve, 1));
      return items.length > 1 ? items.slice(1) : items;
    });
    expect(await Promise.all([1, 2, 3].map((item) => shared.call(item)))).toEqual([1, 2, 3]);
    expect(calls).toBe(4);
  });
});
