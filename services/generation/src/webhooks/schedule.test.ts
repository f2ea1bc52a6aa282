import { describe, expect, it } from "vitest";
import { retryDelayMs } from "./schedule.ts";

// Pure function: Standard Webhooks' schedule, no transport.
describe("retryDelayMs", () => {
  it("waits 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h after each failure, then gives up", () => {
    const minute = 60_000;
    const hour = 60 * minute;
    expect([1, 2, 3, 4, 5, 6, 7, 8].map((failures) => retryDelayMs(failures, 5000))).toEqual([
      5000,
      5 * minute,
      30 * minute,
      2 * hour,
      5 * hour,
      10 * hour,
      10 * hour,
      null,
    ]);
  });

  it("lets only the first step be shortened (WEBHOOK_FIRST_RETRY_MS)", () => {
    expect(retryDelayMs(1, 200)).toBe(200);
    expect(retryDelayMs(2, 200)).toBe(5 * 60_000);
  });
});
