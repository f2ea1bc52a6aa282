import { describe, expect, it } from "vitest";
import { SharedWrites } from "./shared-writes.ts";

describe("SharedWrites", () => {
  it("writes the first item at once and those that came meanwhile together, in order", async () => {
    const writes: number[][] = [];
    const shared = new SharedWrites<number>(async (items) => {
      writes.push(items);
      await new Promise((resolve) => setTimeout(resolve, 5));
    });
    await Promise.all([1, 2, 3, 4, 5].map((item) => shared.add(item)));
    expect(writes).toEqual([[1], [2, 3, 4, 5]]);
    await shared.add(6);
    expect(writes.at(-1)).toEqual([6]);
  });

  it("splits a long line into writes of at most maxPerWrite", async () => {
    const writes: number[][] = [];
    const shared = new SharedWrites<number>(async (items) => void writes.push(items), 2);
    await Promise.all([1, 2, 3, 4, 5].map((item) => shared.add(item)));
    expect(writes).toEqual([[1], [2, 3], [4, 5]]);
  });

  it("fails only the item the writer refuses, by writing a failed batch item by item", async () => {
    const shared = new SharedWrites<number>(async (items) => {
      await new Promise((resolve) => setTimeout(resolve, 1));
      if (items.includes(3)) throw new Error("3 is refused");
    });
    const results = await Promise.allSettled([1, 2, 3, 4].map((item) => shared.add(item)));
    expect(results.map((result) => result.status)).toEqual(["fulfilled", "fulfilled", "rejected", "fulfilled"]);
  });
});
