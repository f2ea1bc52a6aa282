// bench:mix's jobs, drawn from a seeded random source so every leg of a round
// gets the same sequence: the model and its size tier, url or b64_json, the
// upstream's latency (the spec's typical times per image, section 8, divided by
// a time factor so a round of seconds holds many jobs), and the few jobs a
// gateway must refuse itself or whose upstream call fails.
import { REFUSED_MODEL, mixPrompt } from "./fake-upstream.ts";

export type Tier = "1K" | "2K" | "4K";
export type Family = "alpha" | "beta";
export type Format = "url" | "b64_json";
/** image: answered 200; refused: the gateway answers 4xx itself; fails: the upstream answers 500. */
export type JobKind = "image" | "refused" | "fails";

export interface MixModel {
  id: string;
  family: Family;
  tiers: Tier[];
}

/** The square side the mix asks for at each tier (the fake upstream renders exactly that). */
export const TIER_SIDE: Record<Tier, number> = { "1K": 1024, "2K": 2048, "4K": 4096 };

export interface MixShares {
  /** Of the jobs that reach a model: the share of each tier (a tier is drawn first, then a model offering it). */
  tiers: Record<Tier, number>;
  /** The share asking response_format url; the rest b64_json. */
  url: number;
  refused: number;
  fails: number;
}

export const MIX_SHARES: MixShares = { tiers: { "1K": 0.6, "2K": 0.3, "4K": 0.1 }, url: 0.7, refused: 0.05, fails: 0.05 };

/**
 * The spec's typical seconds per image (section 8): beta 10 to 60; alpha about
 * 30 to 70, "2K and 4K at the slow end", taken here as the upper half.
 */
export function specSeconds(family: Family, tier: Tier): [number, number] {
  if (family === "beta") return [10, 60];
  return tier === "1K" ? [30, 70] : [50, 70];
}

export interface MixJob {
  id: string;
  kind: JobKind;
  model: string;
  tier: Tier;
  size: string;
  format: Format;
  /** The upstream's time for this job; 0 for a refused one (no upstream call). */
  delayMs: number;
}


function pickWeighted<T extends string>(weights: Record<T, number>, random: () => number): T {
  const entries = Object.entries(weights) as [T, number][];
  const total = entries.reduce((sum, [, weight]) => sum + weight, 0);
  let left = random() * total;
  for (const [value, weight] of entries) {
    left -= weight;
    if (left < 0) return value;
  }
  return entries.at(-1)![0];
}

function pick<T>(values: readonly T[], random: () => number): T {
  return values[Math.min(values.length - 1, Math.floor(random() * values.length))]!;
}

/** A tier at least one model offers, by the shares; then one of the models offering it. */
function drawModel(models: readonly MixModel[], shares: MixShares, random: () => number): { model: MixModel; tier: Tier } {
  const offered = Object.fromEntries((Object.keys(shares.tiers) as Tier[]).filter((tier) => models.some((m) => m.tiers.includes(tier))).map((tier) => [tier, shares.tiers[tier]])) as Record<Tier, number>;
  const tier = pickWeighted(offered, random);
  return { model: pick(models.filter((m) => m.tiers.includes(tier)), random), tier };
}

function drawKind(shares: MixShares, random: () => number): JobKind {
  const r = random();
  if (r < shares.refused) return "refused";
  return r < shares.refused + shares.fails ? "fails" : "image";
}

/** One job; timeFactor divides the spec's seconds (100: beta 0.1 to 0.6 s). */
export function drawJob(random: () => number, models: readonly MixModel[], timeFactor: number, id: string, shares: MixShares = MIX_SHARES): MixJob {
  const kind = drawKind(shares, random);
  const { model, tier } = drawModel(models, shares, random);
  const format: Format = random() < shares.url ? "url" : "b64_json";
  const [low, high] = specSeconds(model.family, tier);
  const delayMs = kind === "refused" ? 0 : Math.round(((low + random() * (high - low)) * 1000) / timeFactor);
  const side = TIER_SIDE[tier];
  return { id, kind, model: kind === "refused" ? REFUSED_MODEL : model.id, tier, size: `${side}x${side}`, format, delayMs };
}

/** The request body of a job: the prompt carries what the fake upstream is to do (fake-upstream.ts mixPrompt). */
export function jobBody(job: MixJob): string {
  const prompt = mixPrompt("a harbour at dawn, photograph", { id: job.id, delayMs: job.delayMs, fails: job.kind === "fails" });
  return JSON.stringify({ model: job.model, prompt, size: job.size, response_format: job.format });
}

/** The models of a price table (config/prices.json), each with the tiers it is priced at; the family is the id's first word. */
export function modelsOfPrices(prices: Record<string, Partial<Record<Tier, string>>>): MixModel[] {
  return Object.entries(prices).map(([id, tiers]) => ({ id, family: id.startsWith("alpha") ? "alpha" : "beta", tiers: (Object.keys(TIER_SIDE) as Tier[]).filter((tier) => tier in tiers) }));
}
