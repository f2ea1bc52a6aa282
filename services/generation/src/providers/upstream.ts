import type { ImageModelV4File } from "@ai-sdk/provider";
import type { ChannelConfig } from "../catalog.ts";
import { generateWithSandbox } from "../sandbox/provider.ts";
import { guardedFetch } from "./guarded-fetch.ts";
import { UpstreamRefusal } from "./errors.ts";
import { fitToSize } from "./fit.ts";
import { guardedProgress } from "./preview-guard.ts";
import type { ImageModel, PreparedCall, UpstreamProgress, UpstreamRequest } from "./types.ts";
import { PROVIDERS } from "./registry.ts";
import type { AnswerPass, HeldBackReader } from "../answer-gate.ts";

// One attempt of a job on one channel, through the provider package's image model. What can happen:
// images (possibly fewer than n: each is charged only when delivered), a refusal (final),
// or a failure (the job may fail over to the next channel). An abort of the job's own
// signal is rethrown, so the caller can tell a timeout from a failure.

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
  /** The job's place for its answers (answer-gate.ts); without one, answers are read as they come. */
  answerPlace?: AnswerPass,
  /** The job's progress listener (jobs.ts JobObserver); providers that see no progress never call it. */
  onProgress?: (progress: UpstreamProgress) => void,
): Promise<UpstreamOutcome> {
  if (channel.provider === "sandbox") {
    const { prompt, width, height, n, edit, partialImages } = request;
    const outcome = await generateWithSandbox({ prompt, width, height, n, edit, signal: jobSignal, partialImages, onProgress });
    return outcome.ok ? { ...outcome, resized: 0 } : { ...outcome, detail: outcome.message };
  }
  let refusal: string | undefined;
  const provider = PROVIDERS.get(channel.provider)!;
  // The channel's clock starts once the call is made (below); the fetch's gate wait pauses it.
  let deadline: CallDeadline | null = null;
  const fetch = guardedFetch({
    provider: channel.provider,
    // catalog.ts requires a baseUrl of a channel whose provider has no default.
    baseUrl: (channel.baseUrl ?? provider.defaultBaseUrl)!,
    allowPrivateNetwork: settings.allowPrivateUpstreams || channel.allowPrivateNetwork === true,
    maxResponseBytes: settings.maxUpstreamBytes,
    onRefusal: (reason) => (refusal ??= reason),
    // The wait for a place is the gateway's, not the upstream's: the channel's time limit stands still meanwhile.
    admit:
      answerPlace &&
      ((bytes, signal) => {
        const wait = () => answerPlace.admit(bytes, signal);
        return deadline ? deadline.pausedWhile(wait) : wait();
      }),
    // Reads held back are the gateway's wait too: the answer may be there, unread.
    holdBack: answerPlace && ((reader) => answerPlace.holdBack(pausingClock(reader, () => deadline))),
  });
  const progress = onProgress && guardedProgress(onProgress, settings.maxUpstreamBytes);
  const call = (await provider.loadFactory())({ channel, apiKey, fetch, request, jobTimeoutMs: settings.jobTimeoutMs, maxUpstreamBytes: settings.maxUpstreamBytes, onProgress: progress });
  deadline = channel.timeoutMs ? callDeadline(jobSignal, channel.timeoutMs) : null;
  const signal = deadline?.signal ?? jobSignal;
  const results = await Promise.allSettled(batches(request.n, call.maxImagesPerCall).map((count) => imagesFrom(call, request, count, signal))).finally(
    () => deadline?.clear(),
  );
  jobSignal.throwIfAborted();
  const delivered = results.flatMap((result) => (result.status === "fulfilled" ? result.value : []));
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
 * One upstream call of `count` images, through the provider package's model
 * itself (ImageModelV4.doGenerate) rather than the `ai` package's generateImage:
 * the gateway splits n into calls itself (batches()), retries by failing over, and
 * logs no SDK warnings (the mappings choose what each upstream takes on purpose;
 * the model's warnings are dropped), so the wrapper added nothing but, per call
 * held for the upstream, four more suspended async functions (generateImage, its
 * per-call closure, the retry loop and its callback) with their promises and
 * contexts (docs/performance.md#where-the-memory-goes), and CPU on every call.
 * What it did that the gateway relies on is kept here: an edit's images as the
 * model's files, no images at all as NoImageGeneratedError, and base64 images
 * decoded (with Buffer's native decoder, not the SDK's per-byte JavaScript one,
 * which held the event loop far longer for a large image).
 */
function imagesFrom(call: PreparedCall, request: UpstreamRequest, count: number, signal: AbortSignal): PromiseLike<Uint8Array[]> {
  const edit = request.edit;
  return call.model
    .doGenerate({
      prompt: request.prompt,
      files: edit?.images.map(asModelFile),
      mask: edit?.mask && asModelFile(edit.mask),
      n: count,
      size: call.size,
      aspectRatio: call.aspectRatio,
      seed: undefined,
      providerOptions: call.providerOptions ?? NO_PROVIDER_OPTIONS,
      abortSignal: signal,
    })
    .then(imageBytesOf);
}

const NO_PROVIDER_OPTIONS = Object.freeze({});

/**
 * The images of one model call as bytes; an answer without any is an error, as generateImage
 * made it (the `ai` package, megabytes of heap, is loaded only for that error).
 */
async function imageBytesOf(result: Awaited<ReturnType<ImageModel["doGenerate"]>>): Promise<Uint8Array[]> {
  if (result.images.length === 0) {
    const { NoImageGeneratedError } = await import("ai");
    throw new NoImageGeneratedError({ responses: [result.response] });
  }
  return result.images.map((image: string | Uint8Array) => (typeof image === "string" ? Buffer.from(image, "base64") : image));
}

/** An edit's input image or mask as the model takes it; edit-inputs.ts admits only PNG, JPEG and WebP. */
function asModelFile(bytes: Uint8Array): ImageModelV4File {
  return { type: "file", data: bytes, mediaType: imageMediaType(bytes) };
}

/** The media type from the file's signature, PNG when unknown (as generateImage did). */
export function imageMediaType(bytes: Uint8Array): string {
  if (bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return "image/jpeg";
  const riff = bytes[0] === 0x52 && bytes[1] === 0x49 && bytes[2] === 0x46 && bytes[3] === 0x46;
  if (riff && bytes[8] === 0x57 && bytes[9] === 0x45 && bytes[10] === 0x42 && bytes[11] === 0x50) return "image/webp";
  return "image/png";
}

/**
 * The channel's time limit for this call, also aborted by the job's own signal.
 * AbortSignal.any([job, AbortSignal.timeout(ms)]) kept, per call, two more
 * signals, a registration in Node's set of signals it must not collect, and a
 * timer that outlived the call by up to the channel's limit; this one is
 * cleared when the call ends.
 */
function callDeadline(jobSignal: AbortSignal, timeoutMs: number): CallDeadline {
  const controller = new AbortController();
  const onJobAbort = () => controller.abort(jobSignal.reason);
  if (jobSignal.aborted) onJobAbort();
  else jobSignal.addEventListener("abort", onJobAbort, { once: true });
  const expire = () => controller.abort(new DOMException(`The upstream did not answer within ${timeoutMs} ms`, "TimeoutError"));
  let left = timeoutMs;
  let startedAt = performance.now();
  let timer: NodeJS.Timeout | undefined = setTimeout(expire, left);
  let pauses = 0;
  let cleared = false;
  return {
    signal: controller.signal,
    clear: () => {
      cleared = true;
      clearTimeout(timer);
      jobSignal.removeEventListener("abort", onJobAbort);
    },
    pause() {
      // Parallel batches may wait at once: the clock stops at the first pause and starts again after the last.
      if (pauses++ === 0) {
        clearTimeout(timer);
        left -= performance.now() - startedAt;
      }
    },
    resume() {
      if (--pauses === 0 && !cleared && !controller.signal.aborted) {
        startedAt = performance.now();
        timer = setTimeout(expire, Math.max(0, left));
      }
    },
    async pausedWhile(wait) {
      this.pause();
      try {
        return await wait();
      } finally {
        this.resume();
      }
    },
  };
}

/** The reader, with the call's clock stopped while its reads are. */
function pausingClock(reader: HeldBackReader, deadline: () => CallDeadline | null): HeldBackReader {
  let stopped: CallDeadline | null = null;
  return {
    stop() {
      reader.stop();
      if (stopped) return;
      stopped = deadline();
      stopped?.pause();
    },
    start() {
      reader.start();
      stopped?.resume();
      stopped = null;
    },
  };
}

interface CallDeadline {
  signal: AbortSignal;
  clear(): void;
  /** Stops the clock until as many resume() calls; the gateway's own waits do not count against the upstream. */
  pause(): void;
  resume(): void;
  /** Stops the clock while `wait` runs (the job waiting for its place in the answer gate). */
  pausedWhile<T>(wait: () => Promise<T>): Promise<T>;
}

/** n split into calls of at most `perCall` images: 5 with 2 per call is [2, 2, 1]. */
export function batches(n: number, perCall: number): number[] {
  const size = Math.max(1, perCall);
  return Array.from({ length: Math.ceil(n / size) }, (_, index) => Math.min(size, n - index * size));
}

/** An upstream error for a log line and the operator's failure cause: message and status, never headers (they may hold keys). */
export function describe(error: unknown): string {
  if (typeof error === "string") return error;
  if (error instanceof Error) {
    const status = (error as { statusCode?: number }).statusCode;
    const cause = error.cause instanceof Error ? `; cause: ${error.cause.message}` : "";
    return `${error.name}${status ? ` ${status}` : ""}: ${error.message}${cause}`.slice(0, 500);
  }
  return String(error).slice(0, 500);
}
