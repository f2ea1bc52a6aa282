// A playground job while it runs: its request streamed (stream: true, partial images), each partial
// image shown as the live preview, and the job's lookup asked for its progress every
// POLL_MS to drive a progress bar. Where the server gives neither progress nor previews the bar is
// indeterminate and the seconds counter tells the wait; the outcome arrives either way.
import { useEffect, useRef, useState } from "../vendor/hooks.mjs";
import { html } from "../lib/html.js";
import { ApiError, get, postForEvents } from "../lib/api.js";
import { imageSource, isEventStream, readImageEvents } from "../lib/events.js";

/** Partial images asked of the model (OpenAI allows 0 to 3): enough to watch the image form. */
export const PARTIAL_IMAGES = 2;
const POLL_MS = 1500;

/**
 * @typedef {{ running: boolean, requestId: string | null, progress: number | null, preview: string | null,
 *   previews: number, result: any, error: any }} LiveJob
 */
/** @type {LiveJob} */
const IDLE = { running: false, requestId: null, progress: null, preview: null, previews: 0, result: null, error: null };

function useElapsed(running) {
  const [seconds, setSeconds] = useState(0);
  useEffect(() => {
    if (!running) return;
    const started = Date.now();
    setSeconds(0);
    const timer = setInterval(() => setSeconds(Math.floor((Date.now() - started) / 1000)), 1000);
    return () => clearInterval(timer);
  }, [running]);
  return seconds;
}

/**
 * Asks GET /console/api/playground/<id> (the job's lookup) for `progress` and `preview_url` until
 * stopped or the job is no longer running. A failed poll is skipped: the stream tells the outcome.
 * @param {string} requestId
 * @param {(update: Partial<LiveJob>) => void} onUpdate
 */
function pollProgress(requestId, onUpdate) {
  let stopped = false;
  let timer = 0;
  let lastPreview = null;
  const poll = async () => {
    const answer = await get(`/playground/${encodeURIComponent(requestId)}`).catch(() => null);
    if (stopped) return;
    // Anything but a running job's 202 (the finished job's 200) ends the polling; a failed poll does not.
    if (answer && answer.status !== "running" && answer.status !== "queued") return;
    /** @type {Partial<LiveJob>} */
    const update = {};
    if (typeof answer?.progress === "number" && answer.progress >= 0 && answer.progress <= 1) update.progress = answer.progress;
    // A preview link that changed is the newest preview; the same one again is not news.
    if (typeof answer?.preview_url === "string" && answer.preview_url !== lastPreview) {
      lastPreview = answer.preview_url;
      update.preview = answer.preview_url;
    }
    if (Object.keys(update).length > 0) onUpdate(update);
    timer = window.setTimeout(poll, POLL_MS);
  };
  timer = window.setTimeout(poll, POLL_MS);
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}

/** The streamed answer as the playground's result, or the error it ended with. */
async function readStream(response, onUpdate) {
  const requestId = response.headers.get("x-gateway-request-id");
  onUpdate({ requestId });
  const stop = requestId ? pollProgress(requestId, onUpdate) : () => {};
  const images = [];
  /** @type {{ code: string, message: string } | null} */
  let failure = null;
  try {
    await readImageEvents(response.body, (event) => {
      if (event.type.endsWith(".partial_image")) onUpdate((job) => ({ preview: imageSource(event), previews: job.previews + 1 }));
      else if (event.type.endsWith(".completed")) images.push({ b64_json: event.b64_json, output_format: event.output_format, size: event.size });
      else if (event.type === "error") failure = event.error ?? { code: "stream_error", message: "The job failed" };
    });
  } finally {
    stop();
  }
  // A let assigned in a callback: tsc cannot follow it there, so it is read through a cast.
  const failed = /** @type {{ code: string, message: string } | null} */ (failure);
  if (failed) throw new ApiError(0, failed.code, failed.message, null);
  if (images.length === 0) {
    const lookup = requestId ? ` Usage shows request ${requestId}'s outcome.` : "";
    throw new ApiError(0, "stream_ended", `The connection ended before the image arrived.${lookup}`, null);
  }
  return { requestId, data: images, cost: null };
}

/** The playground's job: start(body) runs one; the state says where it is. */
export function useLiveJob() {
  const [job, setJob] = useState(IDLE);
  const seconds = useElapsed(job.running);
  const current = useRef(0);
  const start = async (body) => {
    const mine = ++current.current;
    // Updates from an earlier run (a poll still answering) are dropped.
    const update = (change) => mine === current.current && setJob((state) => ({ ...state, ...(typeof change === "function" ? change(state) : change) }));
    setJob({ ...IDLE, running: true });
    try {
      const response = await postForEvents("/playground", { ...body, stream: true, partial_images: PARTIAL_IMAGES });
      const result = isEventStream(response) ? await readStream(response, update) : await response.json();
      update({ running: false, result });
    } catch (failure) {
      update({ running: false, error: failure });
    }
  };
  return { job, seconds, start };
}

/** The bar (filled to the job's progress, or moving while none is known) and the newest preview. */
export function LiveProgress({ job, seconds }) {
  const percent = job.progress === null ? null : Math.round(job.progress * 100);
  return html`<div class="live-job" data-testid="playground-live">
    <div class="live-status">
      <span>Generating…${percent === null ? "" : html` <strong data-testid="playground-percent">${percent}%</strong>`}</span>
      <span class="muted" data-testid="playground-seconds">${seconds} s</span>
    </div>
    <div
      class=${"progress" + (percent === null ? " indeterminate" : "")}
      role="progressbar"
      aria-label="Generating the image"
      aria-valuemin="0"
      aria-valuemax="100"
      aria-valuenow=${percent ?? undefined}
      data-testid="playground-progress"
    >
      <div class="progress-fill" style=${percent === null ? undefined : { width: `${percent}%` }}></div>
    </div>
    ${job.preview
      ? html`<figure class="image-tile live-preview">
          <img src=${job.preview} alt="Preview of the image being made" data-testid="playground-preview" />
          <figcaption class="muted small">Preview${job.previews > 0 ? ` ${job.previews} of up to ${PARTIAL_IMAGES}` : ""} · the image is still being made</figcaption>
        </figure>`
      : html`<p class="muted small">Most images take seconds; a job may run up to 10 minutes. A preview appears here when the model sends one.</p>`}
  </div>`;
}
