import { describe, expect, it } from "vitest";
import { CallGate } from "./call-gate.ts";

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe("CallGate", () => {
  it("runs at most `limit` calls at once, the rest in the order they came", async () => {
    const gate = new CallGate(2);
    const started: number[] = [];
    const finish: (() => void)[] = [];
    const calls = [0, 1, 2, 3, 4].map((index) =>
      gate.run(async () => {
        started.push(index);
        await new Promise<void>((resolve) => (finish[index] = resolve));
        return index;
      }),
    );
    await tick();
    expect(started).toEqual([0, 1]);
    expect(gate.waiting).toBe(3);
    finish[1]!();
    await tick();
    expect(started).toEqual([0, 1, 2]);
    finish[0]!();
    finish[2]!();
    await tick();
    expect(started).toEqual([0, 1, 2, 3, 4]);
    finish[3]!();
    finish[4]!();
    expect(await Promise.all(calls)).toEqual([0, 1, 2, 3, 4]);
    expect(gate.waiting).toBe(0);
  });

  it("frees the slot of a call that throws", async () => {
    const gate = new CallGate(1);
    await expect(gate.run(() => Promise.reject(new Error("billing is down")))).rejects.toThrow("billing is down");
    expect(await gate.run(async () => "next")).toBe("next");
  });

  it("refuses a limit below one", () => {
    expect(() => new CallGate(0)).toThrow();
  });
});
