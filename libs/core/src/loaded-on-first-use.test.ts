import { describe, expect, it } from "vitest";
import { loadedOnFirstUse } from "./loaded-on-first-use.ts";

describe("loadedOnFirstUse", () => {
  it("loads nothing until asked, then once for every caller", async () => {
    let loads = 0;
    const load = loadedOnFirstUse(async () => ({ module: (loads += 1) }));
    expect(loads).toBe(0);
    const [a, b] = await Promise.all([load(), load()]);
    expect(await load()).toBe(a);
    expect(b).toBe(a);
    expect(loads).toBe(1);
  });

  it("tries again after a failed load instead of keeping the failure", async () => {
    let attempts = 0;
    const load = loadedOnFirstUse(async () => {
      attempts += 1;
      if (attempts === 1) throw new Error("not installed yet");
      return "loaded";
    });
    await expect(load()).rejects.toThrow("not installed yet");
    expect(await load()).toBe("loaded");
    expect(attempts).toBe(2);
  });
});
