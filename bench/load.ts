// One load run with autocannon's programmatic API. autocannon's own latency
// histogram counts whole milliseconds, too coarse for an instant upstream at
// one connection, so every response time (float ms from hrtime) is kept here.
import autocannon, { type RequestSpec } from "autocannon";
import { percentile } from "./stats.ts";

export interface Target {
  name: string;
  url: string;
  headers: Record<string, string>;
  body: string;
  /** API keys to rotate through, one per request (spreads the load over many accounts). */
  keys?: string[];
}

/** A request hook that gives each request the next key's Authorization header. */
function rotatingKeys(keys: string[]) {
  let next = 0;
  return (request: RequestSpec): RequestSpec => {
    next = (next + 1) % keys.length;
    return { ...request, headers: { ...request.headers, authorization: `Bearer ${keys[next]}` } };
  };
}

export interface LoadResult {
  target: string;
  connections: number;
  durationS: number;
  requests: number;
  rps: number;
  meanMs: number;
  p50Ms: number;
  p99Ms: number;
  /** Non-2xx answers, socket errors and timeouts. */
  errors: number;
  statusCodes: Record<string, number>;
}

export async function runLoad(target: Target, connections: number, durationS: number): Promise<LoadResult> {
  const times: number[] = [];
  const instance = autocannon({
    url: target.url,
    method: "POST",
    headers: { "content-type": "application/json", ...target.headers },
    body: target.body,
    connections,
    duration: durationS,
    timeout: 30,
    ...(target.keys && target.keys.length > 1 ? { requests: [{ setupRequest: rotatingKeys(target.keys) }] } : {}),
  });
  instance.on("response", (_client: unknown, _status: number, _bytes: number, responseTime: number) => times.push(responseTime));
  const result = await instance;
  times.sort((a, b) => a - b);
  const statusCodes = Object.fromEntries(Object.entries(result.statusCodeStats).map(([code, stat]) => [code, stat.count]));
  return {
    target: target.name,
    connections,
    durationS: result.duration,
    requests: times.length,
    rps: times.length / result.duration,
    meanMs: times.reduce((sum, time) => sum + time, 0) / Math.max(1, times.length),
    p50Ms: percentile(times, 50),
    p99Ms: percentile(times, 99),
    errors: result.non2xx + result.errors + result.timeouts,
    statusCodes,
  };
}

/** Several runs of the same target and concurrency as one: times weighted by requests. */
export function combine(runs: LoadResult[]): LoadResult {
  const first = runs[0]!;
  const requests = runs.reduce((sum, run) => sum + run.requests, 0);
  const seconds = runs.reduce((sum, run) => sum + run.durationS, 0);
  const statusCodes: Record<string, number> = {};
  for (const run of runs) for (const [code, count] of Object.entries(run.statusCodes)) statusCodes[code] = (statusCodes[code] ?? 0) + count;
  // Medians of the rounds: robust to one round disturbed by another process on a shared machine.
  const median = (pick: (run: LoadResult) => number) => percentile(runs.map(pick).sort((a, b) => a - b), 50);
  return {
    target: first.target,
    connections: first.connections,
    durationS: seconds,
    requests,
    rps: requests / seconds,
    meanMs: runs.reduce((sum, run) => sum + run.meanMs * run.requests, 0) / Math.max(1, requests),
    p50Ms: median((run) => run.p50Ms),
    p99Ms: median((run) => run.p99Ms),
    errors: runs.reduce((sum, run) => sum + run.errors, 0),
    statusCodes,
  };
}
