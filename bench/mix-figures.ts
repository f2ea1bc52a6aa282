// bench:mix's figures: what one round of a leg measured, and the medians of a
// leg's rounds that the table prints.
import { median, percentile } from "./stats.ts";

/** A 200 generation answer: the client's time for the POST and the upstream's own time for that job. */
export interface Timed {
  clientMs: number;
  upstreamMs: number;
}

/** The p99 of the time the gateway added over the upstream's own time; NaN without samples. */
export function addedP99Ms(samples: readonly Timed[]): number {
  if (samples.length === 0) return Number.NaN;
  return percentile(samples.map((s) => s.clientMs - s.upstreamMs).sort((a, b) => a - b), 99);
}

/** CPU-seconds per 1,000 images: (cpuMs / 1000) / images × 1000; NaN when none was delivered. */
export function cpuSecondsPer1000(cpuMs: number, images: number): number {
  return images > 0 ? cpuMs / images : Number.NaN;
}

export interface RoundFigures {
  leg: string;
  round: number;
  /** From the first request to the last answer, the drain included. */
  wallS: number;
  /** 200 b64_json answers, and 200 url answers whose image was downloaded. */
  delivered: number;
  imagesPerS: number;
  /** Over every process of the leg (the upstream's, the gateway's, and for Orvado PostgreSQL's and the broker's). */
  cpuMs: number;
  cpuSecondsPer1000: number;
  /** The peak of the summed RSS of the leg's own processes (not PostgreSQL or Kafka). */
  peakRssBytes: number;
  addedP99Ms: number;
  /** Jobs by what became of them (delivered, refused 4xx, failed 5xx, or an unexpected answer). */
  outcomes: Record<string, number>;
}

export interface LegMedians {
  leg: string;
  rounds: number;
  imagesPerS: number;
  /** imagesPerS ÷ the direct leg's (NaN without a direct leg). */
  ofDirect: number;
  cpuSecondsPer1000: number;
  peakRssBytes: number;
  addedP99Ms: number;
}

/** The median of each figure over a leg's rounds; the direct leg's images/s is the 1.0 of ofDirect. */
export function legMedians(rounds: readonly RoundFigures[], directLeg: string): LegMedians[] {
  const legs = [...new Set(rounds.map((r) => r.leg))];
  const of = (leg: string) => rounds.filter((r) => r.leg === leg);
  const direct = of(directLeg);
  const directRate = direct.length > 0 ? median(direct.map((r) => r.imagesPerS)) : Number.NaN;
  return legs.map((leg) => {
    const mine = of(leg);
    const imagesPerS = median(mine.map((r) => r.imagesPerS));
    return {
      leg,
      rounds: mine.length,
      imagesPerS,
      ofDirect: imagesPerS / directRate,
      cpuSecondsPer1000: median(mine.map((r) => r.cpuSecondsPer1000)),
      peakRssBytes: median(mine.map((r) => r.peakRssBytes)),
      addedP99Ms: median(mine.map((r) => r.addedP99Ms)),
    };
  });
}
