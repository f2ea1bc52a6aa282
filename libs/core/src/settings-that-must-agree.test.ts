import { describe, expect, it } from "vitest";
import { IDEMPOTENCY_KEY_TTL_MS, SETTINGS_THAT_MUST_AGREE, TIMING_DEFAULTS, checkSettingsAgree, timingsFrom, type Timings } from "./settings-that-must-agree.ts";

// Each rule on its own: the defaults agree, and breaking one rule refuses with a
// message that names the variables involved.

const defaults: Timings = { ...TIMING_DEFAULTS };
const refusal = (timings: Timings) => {
  try {
    checkSettingsAgree(timings);
  } catch (error) {
    return (error as Error).message;
  }
  return null;
};

describe("settings that must agree", () => {
  it("the defaults agree", () => {
    expect(refusal(defaults)).toBeNull();
  });

  it("a hold outlives its job: the hold TTL must be longer than the job limit plus the orphan grace", () => {
    // The overdraft the attack found: holds shorter than the job limit.
    expect(refusal({ ...defaults, BILLING_HOLD_TTL_MS: 300_000 })).toMatch(/a hold outlives its job: BILLING_HOLD_TTL_MS \(300000\).*GENERATION_JOB_TIMEOUT_MS \(600000\).*GENERATION_ORPHAN_GRACE_MS \(60000\)/);
    // Equal is not enough: the job could still be running as the hold expires.
    expect(refusal({ ...defaults, BILLING_HOLD_TTL_MS: 660_000 })).toContain("a hold outlives its job");
    expect(refusal({ ...defaults, BILLING_HOLD_TTL_MS: 660_001 })).toBeNull();
    expect(refusal({ ...defaults, GENERATION_ORPHAN_GRACE_MS: 400_000 })).toContain("GENERATION_ORPHAN_GRACE_MS (400000)");
  });

  it("an Idempotency-Key outlives its job", () => {
    expect(refusal({ ...defaults, GENERATION_JOB_TIMEOUT_MS: IDEMPOTENCY_KEY_TTL_MS, BILLING_HOLD_TTL_MS: 2 * IDEMPOTENCY_KEY_TTL_MS })).toMatch(
      /an Idempotency-Key outlives its job: GENERATION_JOB_TIMEOUT_MS/,
    );
  });

  it("the hold sweeper runs within a hold's lifetime", () => {
    expect(refusal({ ...defaults, BILLING_SWEEP_INTERVAL_MS: 900_000 })).toMatch(/BILLING_SWEEP_INTERVAL_MS \(900000\) must be shorter than BILLING_HOLD_TTL_MS \(900000\)/);
  });

  it("names every broken rule at once", () => {
    const message = refusal({ ...defaults, BILLING_HOLD_TTL_MS: 1000, BILLING_SWEEP_INTERVAL_MS: 5000 })!;
    expect(message).toContain("a hold outlives its job");
    expect(message).toContain("the hold sweeper runs within a hold's lifetime");
    expect(SETTINGS_THAT_MUST_AGREE.length).toBe(3);
  });

  it("reads the other service's settings from the environment, or their defaults", () => {
    expect(timingsFrom({ BILLING_HOLD_TTL_MS: 5 }, { BILLING_HOLD_TTL_MS: "7", GENERATION_JOB_TIMEOUT_MS: "2000" })).toEqual({
      ...defaults,
      BILLING_HOLD_TTL_MS: 5,
      GENERATION_JOB_TIMEOUT_MS: 2000,
    });
  });
});
