import type { UpstreamProgress } from "../types.ts";
import { imageMediaType } from "../upstream.ts";
import { asObject } from "../refusal-parts.ts";
import { decodeImage } from "./answer.ts";

// A1111 reports progress only by being asked: GET /sdapi/v1/progress describes whatever
// job the server runs now, not a job of ours (it has no job ids). So it is asked only
// while this call's txt2img or img2img request is in flight, and on a box whose channel
// has capacity 1 (docs/providers.md) the job it runs then is ours or the one before it,
// which ran with the same channel; a box shared with other clients shows their jobs too.
// What it reports only moves forward: a lower fraction (the job before ours ending, ours
// starting) is not passed on. A failed poll is skipped: progress is a courtesy, the
// answer to the job's own request is what counts.

export interface ProgressWatch {
  stop(): void;
}

interface Watched {
  fetch: typeof fetch;
  url: string;
  headers: Record<string, string>;
  intervalMs: number;
  onProgress: (progress: UpstreamProgress) => void;
  /** The call's own signal: an aborted call stops polling too. */
  signal: AbortSignal | undefined;
}

export function watchProgress(watched: Watched): ProgressWatch {
  const stopped = new AbortController();
  const signal = watched.signal ? AbortSignal.any([stopped.signal, watched.signal]) : stopped.signal;
  // Nothing it does may end the call: a listener that throws only ends the watching.
  pollUntilStopped(watched, signal).catch(() => undefined);
  return { stop: () => stopped.abort() };
}

async function pollUntilStopped(watched: Watched, signal: AbortSignal): Promise<void> {
  let fraction = 0;
  let preview = "";
  while (await pause(watched.intervalMs, signal)) {
    const progress = await poll(watched, signal);
    if (!progress || signal.aborted) continue;
    const state = asObject(progress.state);
    if (typeof state.job_count !== "number" || state.job_count === 0) continue;
    const report: UpstreamProgress = {};
    // JSON's 1e999 is Infinity, which is no fraction; one over 1 is 1, said once (not again at every poll).
    const reported = typeof progress.progress === "number" && Number.isFinite(progress.progress) ? Math.min(1, progress.progress) : 0;
    if (reported > fraction) report.fraction = fraction = reported;
    const image = progress.current_image;
    if (typeof image === "string" && image !== "" && image !== preview) {
      preview = image;
      const bytes = decodeImage(image);
      report.preview = { bytes, mediaType: imageMediaType(bytes) as "image/png" | "image/jpeg" | "image/webp" };
    }
    if (report.fraction !== undefined || report.preview) watched.onProgress(report);
  }
}

async function poll(watched: Watched, signal: AbortSignal): Promise<Record<string, unknown> | undefined> {
  try {
    const response = await watched.fetch(watched.url, { method: "GET", headers: watched.headers, signal });
    return response.ok ? asObject(await response.json()) : undefined;
  } catch {
    return undefined;
  }
}

/** Waits the interval; false once stopped. */
function pause(ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve(!signal.aborted);
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}
