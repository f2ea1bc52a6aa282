import type { MessageInitShape } from "@bufbuild/protobuf";
import type { CreateImageRequest, CreateImageResponseSchema, ImageJobEventSchema, JobProgressSchema } from "@orvado/proto";
import type { JobRunner } from "./jobs.ts";
import type { UpstreamProgress } from "./providers/types.ts";

// StreamImage (docs/api.md#streaming): the job CreateImage runs, followed. The events
// wait in a short queue between the job and the call, and it stays short whatever the
// caller's pace: a fraction not yet sent is replaced by the newer one, and at most
// partial_images previews are ever queued. A caller that leaves (its signal) only stops
// the following: the job runs on, as every job does, and is charged when it completes.

type Event = MessageInitShape<typeof ImageJobEventSchema>;
type Done = MessageInitShape<typeof CreateImageResponseSchema>;
type Progress = MessageInitShape<typeof JobProgressSchema>;

export async function* followJob(jobs: Pick<JobRunner, "createImage">, req: CreateImageRequest, signal: AbortSignal): AsyncGenerator<Event> {
  const queue = new EventQueue();
  const previewLimit = req.partialImages ?? 0;
  let previewsSent = 0;
  const onAbort = () => queue.close();
  signal.addEventListener("abort", onAbort, { once: true });
  const answer = jobs.createImage(req, {
    started: () => queue.push({ event: { case: "started", value: { requestId: req.requestId, replayed: false } } }),
    attached: (original) => queue.push({ event: { case: "started", value: { requestId: original, replayed: true } } }),
    progress: (progress) => {
      const preview = progress.preview && previewsSent < previewLimit ? progress.preview : undefined;
      if (preview) previewsSent += 1;
      const event = progressEvent(progress.fraction, preview, previewsSent - 1);
      if (event) queue.push({ event: { case: "progress", value: event } });
    },
  });
  answer.then(
    (done: Done) => queue.finish({ event: { case: "done", value: done } }),
    (error: unknown) => queue.fail(error),
  );
  try {
    yield* queue.drain();
  } finally {
    signal.removeEventListener("abort", onAbort);
    queue.close();
  }
}

function progressEvent(fraction: number | undefined, preview: UpstreamProgress["preview"], index: number): Progress | null {
  const known = fraction !== undefined && Number.isFinite(fraction);
  if (!known && !preview) return null;
  return {
    ...(known && { fraction: Math.min(1, Math.max(0, fraction)) }),
    ...(preview && { partialImage: preview.bytes, partialImageMediaType: preview.mediaType, partialImageIndex: index }),
  };
}

/** Fraction-only progress: a newer one replaces it while it waits. */
const onlyFraction = (event: Event) => event.event?.case === "progress" && event.event.value.partialImage === undefined;

/** The events between the job and the call; closed, it drops what comes (the job is no longer followed). */
class EventQueue {
  readonly #events: Event[] = [];
  #ended = false;
  #error: unknown = null;
  #wake: (() => void) | null = null;

  push(event: Event): void {
    if (this.#ended) return;
    const last = this.#events.at(-1);
    if (last && onlyFraction(last) && onlyFraction(event)) this.#events[this.#events.length - 1] = event;
    else this.#events.push(event);
    this.#notify();
  }

  finish(last: Event): void {
    this.push(last);
    this.#ended = true;
    this.#notify();
  }

  fail(error: unknown): void {
    if (this.#ended) return;
    this.#error = error ?? new Error("the job failed");
    this.#ended = true;
    this.#notify();
  }

  close(): void {
    this.#ended = true;
    this.#events.length = 0;
    this.#notify();
  }

  async *drain(): AsyncGenerator<Event> {
    for (;;) {
      const next = this.#events.shift();
      if (next) {
        yield next;
        continue;
      }
      if (this.#ended) {
        if (this.#error) throw this.#error;
        return;
      }
      await new Promise<void>((resolve) => (this.#wake = resolve));
    }
  }

  #notify(): void {
    const wake = this.#wake;
    this.#wake = null;
    wake?.();
  }
}
