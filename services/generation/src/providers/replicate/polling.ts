import { UpstreamFailure } from "../errors.ts";

// @ai-sdk/replicate asks with "Prefer: wait" and takes the first answer as final; a
// prediction still running after Replicate's wait window (60 s) would then be a parse
// error. This wrapper finishes the job the way Replicate documents: poll urls.get until
// the prediction ends, then hand the SDK the finished prediction.

const RUNNING = new Set(["starting", "processing"]);

interface Prediction {
  status?: string;
  error?: unknown;
  urls?: { get?: string };
}

export function withReplicatePolling(inner: typeof fetch, pollIntervalMs: number): typeof fetch {
  return async (input, init) => {
    const response = await inner(input, init);
    const method = (init?.method ?? "GET").toUpperCase();
    if (method !== "POST" || !response.ok || !(response.headers.get("content-type") ?? "").includes("json")) return response;
    let prediction = (await response.clone().json().catch(() => undefined)) as Prediction | undefined;
    if (!prediction || !RUNNING.has(prediction.status ?? "")) return finished(prediction, response);
    const pollUrl = prediction.urls?.get;
    if (!pollUrl) throw new UpstreamFailure("Replicate answered a running prediction without a polling URL");
    const headers = new Headers(init?.headers);
    headers.delete("prefer");
    headers.delete("content-type");
    let polled: Response = response;
    while (prediction && RUNNING.has(prediction.status ?? "")) {
      await sleep(pollIntervalMs, init?.signal ?? undefined);
      polled = await inner(pollUrl, { method: "GET", headers, signal: init?.signal });
      if (!polled.ok) return polled;
      prediction = (await polled.clone().json().catch(() => undefined)) as Prediction | undefined;
    }
    return finished(prediction, polled);
  };
}

function finished(prediction: Prediction | undefined, response: Response): Response {
  if (prediction?.status === "failed" || prediction?.status === "canceled") {
    throw new UpstreamFailure(`the Replicate prediction ${prediction.status}: ${String(prediction.error ?? "no reason given")}`);
  }
  return response;
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
