// bench:mix's pure parts: the jobs drawn from a seeded source (latency, size,
// format, refusals, failures) and the figures (median, p99 of the added time,
// CPU-seconds per 1,000 images). No transport: these are plain functions; the
// prompt markers are read back by the fake upstream's own parser.
import { describe, expect, it } from "vitest";
import { REFUSED_MODEL, readMixMarkers } from "./fake-upstream.ts";
import { seededRandom } from "@orvado/testkit/seeded-random";
import { drawJob, jobBody, modelsOfPrices, specSeconds, type MixJob } from "./mix-jobs.ts";
import { addedP99Ms, cpuSecondsPer1000, legMedians, type RoundFigures } from "./mix-figures.ts";
import { median } from "./stats.ts";

const MODELS = modelsOfPrices({
  "alpha-2.5-flare": { "1K": "0.04", "2K": "0.08", "4K": "0.16" },
  beta: { "1K": "0.02", "2K": "0.04" },
  "beta-2-lite": { "1K": "0.01" },
});
const FAMILY = new Map(MODELS.map((m) => [m.id, m.family]));

function draw(count: number, seed: number, timeFactor = 100): MixJob[] {
  const random = seededRandom(seed);
  return Array.from({ length: count }, (_, index) => drawJob(random, MODELS, timeFactor, `j${index}`));
}

const share = (jobs: MixJob[], pick: (job: MixJob) => boolean) => jobs.filter(pick).length / jobs.length;

describe("bench:mix jobs", () => {
  it("reads each model's family and tiers from a price table", () => {
    expect(MODELS).toEqual([
      { id: "alpha-2.5-flare", family: "alpha", tiers: ["1K", "2K", "4K"] },
      { id: "beta", family: "beta", tiers: ["1K", "2K"] },
      { id: "beta-2-lite", family: "beta", tiers: ["1K"] },
    ]);
  });

  it("draws the same jobs from the same seed and others from another", () => {
    expect(draw(50, 7)).toEqual(draw(50, 7));
    expect(draw(50, 7)).not.toEqual(draw(50, 8));
  });

  it("keeps the shares of formats, sizes, refusals and failures", () => {
    const jobs = draw(20_000, 1);
    expect(share(jobs, (j) => j.format === "url")).toBeCloseTo(0.7, 1);
    expect(share(jobs, (j) => j.kind === "refused")).toBeCloseTo(0.05, 1);
    expect(share(jobs, (j) => j.kind === "fails")).toBeCloseTo(0.05, 1);
    expect(share(jobs, (j) => j.size === "1024x1024")).toBeCloseTo(0.6, 1);
    expect(share(jobs, (j) => j.size === "2048x2048")).toBeCloseTo(0.3, 1);
    expect(share(jobs, (j) => j.size === "4096x4096")).toBeCloseTo(0.1, 1);
  });

  it("asks each model only for a tier it offers, and refuses with the unknown model", () => {
    const jobs = draw(5_000, 2);
    for (const job of jobs.filter((j) => j.kind !== "refused")) expect(MODELS.find((m) => m.id === job.model)!.tiers).toContain(job.tier);
    for (const job of jobs.filter((j) => j.kind === "refused")) expect([job.model, job.delayMs]).toEqual([REFUSED_MODEL, 0]);
  });

  it("scales the spec's seconds per image by the time factor", () => {
    expect(specSeconds("beta", "4K")).toEqual([10, 60]);
    expect(specSeconds("alpha", "1K")).toEqual([30, 70]);
    const jobs = draw(5_000, 3, 100).filter((j) => j.kind !== "refused");
    for (const job of jobs) {
      const [low, high] = specSeconds(FAMILY.get(job.model)!, job.tier);
      expect(job.delayMs).toBeGreaterThanOrEqual(low * 10);
      expect(job.delayMs).toBeLessThanOrEqual(high * 10);
    }
    const betas = jobs.filter((j) => FAMILY.get(j.model) === "beta").map((j) => j.delayMs);
    expect(Math.min(...betas)).toBeLessThan(150);
    expect(Math.max(...betas)).toBeGreaterThan(550);
  });

  it("puts the job's id, delay and failure in a prompt the fake upstream reads back", () => {
    const [job] = draw(1, 4);
    const failing: MixJob = { ...job!, kind: "fails", delayMs: 321 };
    const body = JSON.parse(jobBody(failing)) as Record<string, unknown>;
    expect(readMixMarkers(body.prompt)).toEqual({ id: failing.id, delayMs: 321, fails: true });
    expect(body).toMatchObject({ model: failing.model, size: failing.size, response_format: failing.format });
    expect(readMixMarkers("a lighthouse on a cliff at dusk, oil painting")).toEqual({ id: undefined, delayMs: undefined, fails: false });
  });
});

function round(leg: string, imagesPerS: number, extra: Partial<RoundFigures> = {}): RoundFigures {
  return { leg, round: 1, wallS: 10, delivered: imagesPerS * 10, imagesPerS, cpuMs: 0, cpuSecondsPer1000: 1, peakRssBytes: 100, addedP99Ms: 5, outcomes: {}, ...extra };
}

describe("bench:mix figures", () => {
  it("takes the middle value as the median", () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([])).toBe(0);
  });

  it("takes the p99 of client time minus the upstream's own time", () => {
    const samples = Array.from({ length: 100 }, (_, i) => ({ clientMs: 1_000 + i, upstreamMs: 1_000 }));
    expect(addedP99Ms(samples)).toBe(98);
    expect(addedP99Ms([])).toBeNaN();
  });

  it("counts CPU-seconds per 1,000 images", () => {
    expect(cpuSecondsPer1000(12_000, 400)).toBe(30);
    expect(cpuSecondsPer1000(5, 0)).toBeNaN();
  });

  it("gives each leg the median of its rounds, its rate also as a share of the direct leg's", () => {
    const rounds = [round("direct", 100), round("direct", 120), round("direct", 80), round("Orvado", 60, { peakRssBytes: 300 }), round("Orvado", 50, { peakRssBytes: 200 }), round("Orvado", 70, { peakRssBytes: 400 })];
    const [direct, orvado] = legMedians(rounds, "direct");
    expect(direct).toMatchObject({ leg: "direct", rounds: 3, imagesPerS: 100, ofDirect: 1 });
    expect(orvado).toMatchObject({ leg: "Orvado", imagesPerS: 60, ofDirect: 0.6, peakRssBytes: 300 });
  });
});
