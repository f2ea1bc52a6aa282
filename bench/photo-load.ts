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

export interface Exchange {
  status: number;
  bytes: number;
  ms: number;
  /** The body's first keepBytes bytes, as text ("" without keepBytes). */
  head: string;
}

export interface ExchangeRequest {
  method: "GET" | "POST";
  headers?: Record<string, string>;
  body?: string;
  timeoutMs: number;
  /** Keep this much of the body (a url answer's JSON); the rest is counted and dropped. */
  keepBytes?: number;
}

/** One request on the agent's sockets; a socket error or timeout resolves as status 0. */
export function exchange(agent: Agent, url: URL, call: ExchangeRequest): Promise<Exchange> {
  const started = performance.now();
  const body = call.body ?? "";
  const keep = call.keepBytes ?? 0;
  const headers = call.method === "POST" ? { ...call.headers, "content-type": "application/json", "content-length": String(Buffer.byteLength(body)) } : call.headers;
  return new Promise((resolve) => {
    const sent = request(url, { method: call.method, agent, headers, timeout: call.timeoutMs });
    sent.once("response", (response) => {
      let bytes = 0;
      const kept: Buffer[] = [];
      const done = (status: number) => resolve({ status, bytes, ms: performance.now() - started, head: Buffer.concat(kept).subarray(0, keep).toString("utf8") });
      response.on("data", (chunk: Buffer) => {
        if (bytes < keep) kept.push(chunk.subarray(0, keep - bytes));
        bytes += chunk.length;
      });
      response.once("end", () => done(response.statusCode ?? 0));
      response.once("error", () => done(0));
    });
    sent.once("timeout", () => sent.destroy(new Error("timeout")));
    sent.once("error", () => resolve({ status: 0, bytes: 0, ms: performance.now() - started, head: "" }));
    sent.end(body);
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
    while (!stopped) exchanges.push(await exchange(agent, url, { method: "POST", headers: load.headers, body: load.body, timeoutMs: load.timeoutMs }));
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
