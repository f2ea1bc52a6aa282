import { describe, expect, it } from "vitest";
import { loadBillingConfig } from "./config.ts";

// Billing refuses settings that let a hold expire under a running job
// (settings-that-must-agree.ts in @orvado/core), whichever process reads them.

const SECRET = "0123456789abcdef";

describe("billing config: settings that must agree", () => {
  it("starts with a hold longer than the job limit plus the orphan grace", () => {
    expect(loadBillingConfig({ ORVADO_INTERNAL_SECRET: SECRET }).holdTtlMs).toBe(900_000);
    const short = { BILLING_HOLD_TTL_MS: "8000", BILLING_SWEEP_INTERVAL_MS: "500", GENERATION_JOB_TIMEOUT_MS: "5000", GENERATION_ORPHAN_GRACE_MS: "2000" };
    expect(loadBillingConfig({ ORVADO_INTERNAL_SECRET: SECRET, ...short }).holdTtlMs).toBe(8000);
  });

  it("refuses a hold shorter than the job limit (its own default when unset), naming the variables", () => {
    expect(() => loadBillingConfig({ ORVADO_INTERNAL_SECRET: SECRET, BILLING_HOLD_TTL_MS: "60000" })).toThrow(
      /BILLING_HOLD_TTL_MS \(60000\) must be longer than GENERATION_JOB_TIMEOUT_MS \(600000\) \+ GENERATION_ORPHAN_GRACE_MS \(60000\)/,
    );
    expect(() => loadBillingConfig({ ORVADO_INTERNAL_SECRET: SECRET, BILLING_HOLD_TTL_MS: "8000", BILLING_SWEEP_INTERVAL_MS: "500", GENERATION_JOB_TIMEOUT_MS: "5000", GENERATION_ORPHAN_GRACE_MS: "3000" })).toThrow(/a hold outlives its job/);
  });

  it("refuses a hold sweep interval as long as the hold", () => {
    expect(() => loadBillingConfig({ ORVADO_INTERNAL_SECRET: SECRET, BILLING_SWEEP_INTERVAL_MS: "900000" })).toThrow(/BILLING_SWEEP_INTERVAL_MS/);
  });
});
