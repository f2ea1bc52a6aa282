import { describe, expect, it } from "vitest";
import { startTestStack } from "./harness.ts";

// The stack (npm start) refuses, before any service starts, settings under which a
// hold could expire while its job runs: the overdraft of issue G item 9, where an
// account with $0.02 ended at -$0.04.

describe("the stack refuses settings that must agree but do not", () => {
  it("a hold TTL not longer than the job limit plus the orphan grace", async () => {
    await expect(startTestStack({ BILLING_HOLD_TTL_MS: "60000", GENERATION_JOB_TIMEOUT_MS: "120000" })).rejects.toThrow(
      /a hold outlives its job: BILLING_HOLD_TTL_MS \(60000\) must be longer than GENERATION_JOB_TIMEOUT_MS \(120000\) \+ GENERATION_ORPHAN_GRACE_MS \(60000\)/,
    );
  });

  it("a hold sweep interval as long as the hold", async () => {
    await expect(startTestStack({ BILLING_SWEEP_INTERVAL_MS: "900000" })).rejects.toThrow(/the hold sweeper runs within a hold's lifetime/);
  });
});
