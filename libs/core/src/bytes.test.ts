import { describe, expect, it } from "vitest";
import { bufferView } from "./bytes.ts";

// In memory: no transport.
describe("bufferView", () => {
  it("views the same bytes of a slice of a larger array, without copying them", () => {
    const whole = new Uint8Array([1, 2, 3, 4, 5]);
    const view = bufferView(whole.subarray(1, 4));
    expect([...view]).toEqual([2, 3, 4]);
    whole[2] = 9;
    expect(view[1]).toBe(9);
  });
});
