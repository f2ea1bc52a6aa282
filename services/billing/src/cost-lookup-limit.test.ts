import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestBilling, type TestBilling } from "./test-support.ts";
import { CostLookupLimiter } from "./cost-lookup-limit.ts";

// The cost lookup's fixed-window counter against real Postgres (or PGlite), on a
// clock the test moves. Two limiters over one database stand for two replicas.

let billing: TestBilling;
let clock = 1_800_000_000_000;

beforeAll(async () => {
  billing = await startTestBilling();
});
afterAll(() => billing?.close());

describe("CostLookupLimiter", () => {
  it("allows maxPerWindow lookups per address across replicas, then refuses until the next window", async () => {
    const policy = { windowMs: 60_000, maxPerWindow: 3 };
    const replicas = [new CostLookupLimiter(billing.db, policy, () => clock), new CostLookupLimiter(billing.db, policy, () => clock)];
    const results = [];
    for (let n = 0; n < 4; n += 1) results.push(await replicas[n % 2]!.admit("192.0.2.1"));
    expect(results.map((result) => result.allowed)).toEqual([true, true, true, false]);
    expect(results[3]).toEqual({ allowed: false, retryAfterSeconds: 60 });
    expect(await replicas[0]!.admit("192.0.2.2")).toEqual({ allowed: true });

    clock += 45_000;
    expect(await replicas[1]!.admit("192.0.2.1")).toEqual({ allowed: false, retryAfterSeconds: 15 });
    clock += 15_000;
    expect(await replicas[1]!.admit("192.0.2.1")).toEqual({ allowed: true });
  });
});
