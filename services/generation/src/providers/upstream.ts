import { generateImage } from "ai";
import type { ChannelConfig } from "../catalog.ts";
import { generateWithSandbox } from "../sandbox/provider.ts";
import { guardedFetch } from "./guarded-fetch.ts";
import { UpstreamRefusal } from "./errors.ts";
import { fitToSize } from "./fit.ts";
import { imageBytes } from "./image-bytes.ts";
import type { UpstreamRequest } from "./types.ts";
import { PROVIDERS } from "./registry.ts";

// One attempt of a job on one channel, through the AI SDK's generateImage. What can happen:
// images (possibly fewer than n: each is charged only when delivered), a refusal (final),
// or a failure (the job may fail over to the next channel). An abort of the job's own
// signal is rethrown, so the caller can tell a timeout from a failure.

// The SDK prints "unsupported setting" warnings to the console; the mappings here choose
// what each upstream accepts on purpose, and the service logs through pino only.
(globalThis as { AI_SDK_LOG_WARNINGS?: boolean }).AI_SDK_LOG_WARNINGS = false;

export type UpstreamOutcome =
  | { ok: true; images: Buffer[]; resized: number }
  | { ok: false; kind: "refused" | "failed"; message: string; detail: string };

export interface UpstreamSettings {
  jobTimeoutMs: number;
  allowPrivateUpstreams: boolean;
  maxUpstreamBytes: number;
}

export const REFUSED_MESSAGE = "The model refused the prompt (content policy)";
export const FAILED_MESSAGE = "The model failed the job";

export async function generateOnChannel(
  channel: ChannelConfig,
  apiKey: string | undefined,
  request: UpstreamRequest,
  jobSignal: AbortSignal,
  settings: UpstreamSettings,
): Promise<UpstreamOutcome> {
  if (channel.provider === "sandbox") {
    const outcome = await generateWithSandbox({ ...request, signal: jobSignal });
    return outcome.ok ? { ...outcome, resized: 0 } : { ...outcome, detail: outcome.message };
  }
  let refusal: string | undefined;
  const provider = PROVIDERS.get(channel.provider)!;
  const fetch = guardedFetch({
    provider: channel.provider,
    // catalog.ts requires a baseUrl of a channel whose provider has no default.
    baseUrl: (channel.baseUrl ?? provider.defaultBaseUrl)!,
    allowPrivateNetwork: settings.allowPrivateUpstreams || channel.allowPrivateNetwork === true,
    maxResponseBytes: settings.maxUpstreamBytes,
    onRefusal: (reason) => (refusal ??= reason),
  });
  const call = provider.factory({ channel, apiKey, fetch, request, jobTimeoutMs: settings.jobTimeoutMs });
  const deadline = channel.timeoutMs ? callDeadline(jobSignal, channel.timeoutMs) : null;
  const signal = deadline?.signal ?? jobSignal;
  const results = await Promise.allSettled(
    batches(request.n, call.maxImagesPerCall).map((count) =>
      generateImage({
        model: call.model,
        // An edit's images go in the prompt: each package sends them its provider's way
        // (OpenAI's /images/edits multipart, Gemini's inline parts, BFL's input_image, …).
        prompt: request.edit ? { text: request.prompt, images: request.edit.images, mask: request.edit.mask } : request.prompt,
        n: count,
        maxImagesPerCall: count,
        size: call.size,
        aspectRatio: call.aspectRatio,
        providerOptions: call.providerOptions,
        // Failover across channels is the gateway's retry; the SDK's own would double-bill time.
        maxRetries: 0,
        abortSignal: signal,
      }),
    ),
  ).finally(() => deadline?.clear());
  jobSignal.throwIfAborted();
  const delivered = results.flatMap((result) => (result.status === "fulfilled" ? result.value.images.map(imageBytes) : []));
  const errors = results.flatMap((result) => (result.status === "rejected" ? [result.reason as unknown] : []));
  if (delivered.length === 0) {
    if (refusal !== undefined || errors.some((error) => error instanceof UpstreamRefusal)) {
      return { ok: false, kind: "refused", message: REFUSED_MESSAGE, detail: refusal ?? describe(errors[0]) };
    }
    return { ok: false, kind: "failed", message: FAILED_MESSAGE, detail: describe(errors[0] ?? "no image in the answer") };
  }
  return fitAll(delivered.slice(0, request.n), request, errors);
}

async function fitAll(images: Uint8Array[], request: UpstreamRequest, errors: unknown[]): Promise<UpstreamOutcome> {
  const fitted = await Promise.allSettled(images.map((bytes) => fitToSize(bytes, request.width, request.height)));
  const good = fitted.flatMap((result) => (result.status === "fulfilled" ? [result.value] : []));
  if (good.length === 0) {
    const reason = fitted.find((result) => result.status === "rejected") as PromiseRejectedResult | undefined;
    return { ok: false, kind: "failed", message: FAILED_MESSAGE, detail: describe(reason?.reason ?? errors[0]) };
  }
  return { ok: true, images: good.map((image) => image.png), resized: good.filter((image) => image.resized).length };
}

/**
 * The channel's time limit for this call, also aborted by the job's own signal.
 * AbortSignal.any([job, AbortSignal.timeout(ms)]) kept, per call, two more
 * signals, a registration in Node's set of signals it must not collect, and a
 * timer that outlived the call by up to the channel's limit; this one is
 * cleared when the call ends.
 */
function callDeadline(jobSignal: AbortSignal, timeoutMs: number): { signal: AbortSignal; clear(): void } {
  const controller = new AbortController();
  const onJobAbort = () => controller.abort(jobSignal.reason);
  if (jobSignal.aborted) onJobAbort();
  else jobSignal.addEventListener("abort", onJobAbort, { once: true });
  const timer = setTimeout(() => controller.abort(new DOMException(`The upstream did not answer within ${timeoutMs} ms`, "TimeoutError")), timeoutMs);
  return {
    signal: controller.signal,
    clear: () => {
      clearTimeout(timer);
      jobSignal.removeEventListener("abort", onJobAbort);
    },
  };
}

/** n split into calls of at most `perCall` images: 5 with 2 per call is [2, 2, 1]. */
export function batches(n: number, perCall: number): number[] {
  const size = Math.max(1, perCall);
  return Array.from({ length: Math.ceil(n / size) }, (_, index) => Math.min(size, n - index * size));
}

/** A log line for an upstream error: message and status, never headers (they may hold keys). */
function describe(error: unknown): string {
  if (typeof error === "string") return error;
  if (error instanceof Error) {
    const status = (error as { statusCode?: number }).statusCode;
    const cause = error.cause instanceof Error ? `; cause: ${error.cause.message}` : "";
    return `${error.name}${status ? ` ${status}` : ""}: ${error.message}${cause}`.slice(0, 500);
  }
  return String(error).slice(0, 500);
}
