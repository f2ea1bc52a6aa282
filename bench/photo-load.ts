// A closed-loop load for large answers (bench/photo.ts): `connections` workers each
// send one request at a time for durationS, then every request still open is let
// finish (a 4096x4096 answer at 100 connections can take longer than a short
// run), so throughput is answers ÷ the whole wall time. autocannon stops counting
// at the end of its duration, which at these sizes would drop most answers.
// Bodies are counted and dropped, never kept, so the client's memory stays flat.
import { Agent, request } from "node:http";
import { percentile } from "./stats.ts";

export interface PhotoLoadResult {
  connections: number;
  /** From the first request to the last answer, drain included. */
  wallS: number;
  answers: number;
  rps: number;
  p50Ms: number;
  p99Ms: number;
  /** Non-200 answers and socket errors. */
  errors: number;
  statusCodes: Record<string, number>;
  /** Mean size of a 200 answer's body. */
  meanAnswerBytes: number;
  /** True when the run was cut short by stop() (for example Orvado's RSS passed the limit). */
  stopped: boolean;
}

interface Exchange {
  status: number;
  bytes: number;
  ms: number;
}

function post(agent: Agent, url: URL, headers: Record<string, string>, body: string, timeoutMs: number): Promise<Exchange> {
  const started = performance.now();
  return new Promise((resolve) => {
    const call = request(url, { method: "POST", agent, headers: { ...headers, "content-type": "application/json", "content-length": Buffer.byteLength(body) }, timeout: timeoutMs });
    call.once("response", (response) => {
      let bytes = 0;
      response.on("data", (chunk: Buffer) => (bytes += chunk.length));
      response.once("end", () => resolve({ status: response.statusCode ?? 0, bytes, ms: performance.now() - started }));
      response.once("error", () => resolve({ status: 0, bytes, ms: performance.now() - started }));
    });
    call.once("timeout", () => call.destroy(new Error("timeout")));
    call.once("error", () => resolve({ status: 0, bytes: 0, ms: performance.now() - started }));
    call.end(body);
  });
}

export interface PhotoLoad {
  url: string;
  headers: Record<string, string>;
  body: string;
  connections: number;
  durationS: number;
  timeoutMs: number;
}

/** Runs the load; the returned stop() ends it at once: no new requests, and the open ones are cut (counted as errors). */
export function startPhotoLoad(load: PhotoLoad): { done: Promise<PhotoLoadResult>; stop(): void } {
  const agent = new Agent({ keepAlive: true, maxSockets: load.connections });
  const url = new URL(load.url);
  const exchanges: Exchange[] = [];
  const started = performance.now();
  let stopped = false;
  let stoppedEarly = false;
  const timer = setTimeout(() => (stopped = true), load.durationS * 1000);
  const worker = async () => {
    while (!stopped) exchanges.push(await post(agent, url, load.headers, load.body, load.timeoutMs));
  };
  const done = Promise.all(Array.from({ length: load.connections }, worker)).then(() => {
    clearTimeout(timer);
    agent.destroy();
    const wallS = (performance.now() - started) / 1000;
    const ok = exchanges.filter((e) => e.status === 200);
    const times = ok.map((e) => e.ms).sort((a, b) => a - b);
    const statusCodes: Record<string, number> = {};
    for (const e of exchanges) statusCodes[String(e.status)] = (statusCodes[String(e.status)] ?? 0) + 1;
    return {
      connections: load.connections,
      wallS,
      answers: ok.length,
      rps: ok.length / wallS,
      p50Ms: percentile(times, 50),
      p99Ms: percentile(times, 99),
      errors: exchanges.length - ok.length,
      statusCodes,
      meanAnswerBytes: ok.reduce((sum, e) => sum + e.bytes, 0) / Math.max(1, ok.length),
      stopped: stoppedEarly,
    };
  });
  return {
    done,
    stop() {
      stoppedEarly = !stopped;
      stopped = true;
      agent.destroy();
    },
  };
}
