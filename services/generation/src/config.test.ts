import { describe, expect, it } from "vitest";
import { loadGenerationConfig } from "./config.ts";

// Generation refuses a job limit its billing hold would not outlive
// (settings-that-must-agree.ts in @orvado/core).

const ENV = { ORVADO_INTERNAL_SECRET: "0123456789abcdef", ORVADO_URL_SIGNING_SECRET: "0123456789abcdef" };

describe("generation config: settings that must agree", () => {
  it("starts with the defaults, and with a job limit shorter than BILLING_HOLD_TTL_MS", () => {
    expect(loadGenerationConfig(ENV).jobTimeoutMs).toBe(600_000);
    expect(loadGenerationConfig({ ...ENV, BILLING_HOLD_TTL_MS: "70000", GENERATION_JOB_TIMEOUT_MS: "60000", GENERATION_ORPHAN_GRACE_MS: "5000" }).jobTimeoutMs).toBe(60_000);
  });

  it("refuses a job limit plus orphan grace that billing's hold would not outlive, naming the variables", () => {
    expect(() => loadGenerationConfig({ ...ENV, BILLING_HOLD_TTL_MS: "60000" })).toThrow(/BILLING_HOLD_TTL_MS \(60000\).*GENERATION_JOB_TIMEOUT_MS \(600000\)/);
    // The default hold (15 minutes) against a long grace.
    expect(() => loadGenerationConfig({ ...ENV, GENERATION_ORPHAN_GRACE_MS: "600000" })).toThrow(/GENERATION_ORPHAN_GRACE_MS \(600000\)/);
  });

  it("reads the per-account concurrent-job default (32; 0 turns it off)", () => {
    expect(loadGenerationConfig(ENV).accountMaxConcurrentJobs).toBe(32);
    expect(loadGenerationConfig({ ...ENV, GENERATION_ACCOUNT_MAX_CONCURRENT_JOBS: "0" }).accountMaxConcurrentJobs).toBe(0);
  });

  it("reads the channel lease (30 s) and renews it three times a lease", () => {
    expect(loadGenerationConfig(ENV)).toMatchObject({ channelLeaseTtlMs: 30_000, channelLeaseRenewMs: 10_000 });
    expect(loadGenerationConfig({ ...ENV, GENERATION_CHANNEL_LEASE_TTL_MS: "4500" })).toMatchObject({ channelLeaseTtlMs: 4500, channelLeaseRenewMs: 1500 });
  });

  it("sweeps for lost jobs every half orphan grace, at most 30 s apart", () => {
    expect(loadGenerationConfig(ENV).orphanSweepIntervalMs).toBe(30_000);
    expect(loadGenerationConfig({ ...ENV, GENERATION_ORPHAN_GRACE_MS: "2000" }).orphanSweepIntervalMs).toBe(1000);
  });
});

describe("generation config: billing's replicas", () => {
  it("takes one URL or a comma-separated list of replicas", () => {
    expect(loadGenerationConfig(ENV).billingUrls).toEqual(["http://127.0.0.1:7102"]);
    expect(loadGenerationConfig({ ...ENV, ORVADO_BILLING_URL: "http://billing-0:7102, http://billing-1:7102," }).billingUrls).toEqual([
      "http://billing-0:7102",
      "http://billing-1:7102",
    ]);
  });

  it("refuses an entry that is not an http(s) URL, and an empty list, naming the variable", () => {
    expect(() => loadGenerationConfig({ ...ENV, ORVADO_BILLING_URL: "http://billing-0:7102,billing-1" })).toThrow(/ORVADO_BILLING_URL: entry 2 is not an http\(s\) URL/);
    expect(() => loadGenerationConfig({ ...ENV, ORVADO_BILLING_URL: "ftp://billing:7102" })).toThrow(/ORVADO_BILLING_URL: entry 1/);
    expect(() => loadGenerationConfig({ ...ENV, ORVADO_BILLING_URL: " , " })).toThrow(/ORVADO_BILLING_URL: needs at least one/);
  });
});

describe("generation config: the transport to billing", () => {
  it("is colocated unless ORVADO_RPC_TRANSPORT says http2, and refuses anything else", () => {
    expect(loadGenerationConfig(ENV).rpcTransport).toBe("colocated");
    expect(loadGenerationConfig({ ...ENV, ORVADO_RPC_TRANSPORT: "http2" }).rpcTransport).toBe("http2");
    expect(() => loadGenerationConfig({ ...ENV, ORVADO_RPC_TRANSPORT: "grpc" })).toThrow(/ORVADO_RPC_TRANSPORT/);
  });
});
