// bench:mix's client: `connections` workers, each sending one job at a time for
// durationS (the jobs drawn in order from one seeded source), then every request
// still open is let finish. A 200 url answer's image is downloaded, as a real
// client does, before the worker sends its next job; its POST's time is the
// answer's time, the download not included. Bodies are counted and dropped.
import { Agent } from "node:http";
import { exchange, type Exchange } from "./photo-load.ts";
import { seededRandom } from "@orvado/testkit/seeded-random";
import { drawJob, jobBody, type MixJob, type MixModel } from "./mix-jobs.ts";

export interface MixTarget {
  /** The generation endpoint. */
  url: string;
  headers: Record<string, string>;
}

export interface MixLoad {
  target: MixTarget;
  models: readonly MixModel[];
  seed: number;
  timeFactor: number;
  connections: number;
  durationS: number;
  timeoutMs: number;
  /** Prefix of the job ids of this round (ids must not repeat within a round). */
  idPrefix: string;
}

export interface JobResult {
  job: MixJob;
  post: Exchange;
  /** The download of a url answer's image (absent for b64_json and for non-200 answers). */
  download?: Exchange;
  /** delivered, refused, failed, or unexpected: <kind> <status>. */
  outcome: string;
}

export interface MixLoadResult {
  wallS: number;
  results: JobResult[];
}

// Enough of a url answer's JSON for its link; a b64_json answer's first bytes name its field.
const KEEP_BYTES = 16_384;
const LOOPBACK = new Set(["127.0.0.1", "localhost", "[::1]"]);

/** The first image link of a url answer, if it points at this machine (the bench sends nothing elsewhere). */
function imageLink(head: string): URL | null {
  try {
    const link = (JSON.parse(head) as { data?: { url?: string }[] }).data?.[0]?.url;
    const url = link ? new URL(link) : null;
    return url && LOOPBACK.has(url.hostname) ? url : null;
  } catch {
    return null;
  }
}

function outcomeOf(job: MixJob, post: Exchange, download: Exchange | undefined): string {
  if (job.kind === "refused" && post.status >= 400 && post.status < 500) return "refused";
  if (job.kind === "fails" && post.status >= 500) return "failed";
  if (job.kind !== "image" || post.status !== 200) return `unexpected: ${job.kind} ${post.status}`;
  if (job.format === "b64_json") return post.head.includes('"b64_json"') ? "delivered" : "unexpected: image without b64_json";
  if (!download) return "unexpected: url answer without a local link";
  return download.status === 200 && download.bytes > 0 ? "delivered" : `unexpected: download ${download.status}`;
}

async function runJob(agent: Agent, load: MixLoad, endpoint: URL, job: MixJob): Promise<JobResult> {
  const post = await exchange(agent, endpoint, { method: "POST", headers: load.target.headers, body: jobBody(job), timeoutMs: load.timeoutMs, keepBytes: KEEP_BYTES });
  const link = job.format === "url" && post.status === 200 ? imageLink(post.head) : null;
  const download = link ? await exchange(agent, link, { method: "GET", timeoutMs: load.timeoutMs }) : undefined;
  return { job, post, download, outcome: outcomeOf(job, post, download) };
}

export async function runMixLoad(load: MixLoad): Promise<MixLoadResult> {
  // Downloads go to other ports than the POSTs (the upstream's for direct and Portkey), each with its own pool.
  const agent = new Agent({ keepAlive: true, maxSockets: load.connections });
  const endpoint = new URL(load.target.url);
  const random = seededRandom(load.seed);
  const results: JobResult[] = [];
  let sent = 0;
  let stopped = false;
  const timer = setTimeout(() => (stopped = true), load.durationS * 1000);
  const started = performance.now();
  const worker = async () => {
    while (!stopped) {
      const job = drawJob(random, load.models, load.timeFactor, `${load.idPrefix}-${sent++}`);
      results.push(await runJob(agent, load, endpoint, job));
    }
  };
  await Promise.all(Array.from({ length: load.connections }, worker));
  clearTimeout(timer);
  agent.destroy();
  return { wallS: (performance.now() - started) / 1000, results };
}
