import { loadSharp } from "../image-library.ts";
import type { UpstreamProgress } from "../providers/types.ts";

// The sandbox's "work" as a real backend reports it (docs/api.md#streaming): its delay
// in steps, each reported as a fraction, with up to `partial_images` previews of its
// final image spread over them, so streams and the lookup's progress can be tried
// without any upstream. The previews are small, blurred renders, sharper each time,
// as a diffusion model's previews are.

/** Steps the delay is told in; each is one timer, so a job of any length costs the same few. */
export const SANDBOX_PROGRESS_STEPS = 10;
/** The longest side of a preview: a preview is for showing that work advances, not for keeping. */
const PREVIEW_SIDE = 256;
/** The first preview's blur; each later one is sharper. */
const FIRST_PREVIEW_BLUR = 12;

export interface SandboxWork {
  delayMs: number;
  signal: AbortSignal;
  onProgress: (progress: UpstreamProgress) => void;
  /** The image the previews are made from, and how many to make; none when 0. */
  previews: { of: Buffer; count: number } | null;
}

/** Waits out the delay in steps, reporting each; preview i goes out after step round((i + 1) · steps / (count + 1)). */
export async function workWithProgress(work: SandboxWork): Promise<void> {
  const count = work.previews?.count ?? 0;
  const previewAfter = new Map(Array.from({ length: count }, (_, index) => [Math.max(1, Math.round(((index + 1) * SANDBOX_PROGRESS_STEPS) / (count + 1))), index]));
  for (let step = 1; step <= SANDBOX_PROGRESS_STEPS; step++) {
    await abortableDelay(work.delayMs / SANDBOX_PROGRESS_STEPS, work.signal);
    const index = previewAfter.get(step);
    const preview = index === undefined || !work.previews ? undefined : await previewOf(work.previews.of, index, count);
    work.onProgress({ fraction: step / SANDBOX_PROGRESS_STEPS, ...(preview && { preview: { bytes: preview, mediaType: "image/png" } }) });
  }
}

/** Preview `index` of `count`: the image downscaled, blurred less for each later one. */
export async function previewOf(image: Buffer, index: number, count: number): Promise<Buffer> {
  const sharp = await loadSharp();
  const sigma = Math.max(0.3, (FIRST_PREVIEW_BLUR * (count - index)) / count);
  return sharp(image).resize(PREVIEW_SIDE, PREVIEW_SIDE, { fit: "inside" }).blur(sigma).png().toBuffer();
}

export function abortableDelay(ms: number, signal: AbortSignal): Promise<void> {
  signal.throwIfAborted();
  if (ms <= 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}
