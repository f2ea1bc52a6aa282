import { parseSandboxDirectives } from "./directives.ts";
import { assertSandboxSize, renderSandboxPng } from "./render.ts";
import { editSandboxPng } from "./edit.ts";
import type { EditInputs } from "../edit-inputs.ts";
import type { UpstreamProgress } from "../providers/types.ts";
import { abortableDelay, workWithProgress } from "./progress.ts";

export interface SandboxRequest {
  prompt: string;
  width: number;
  height: number;
  n: number;
  signal: AbortSignal;
  /** An image edit's inputs (edit.ts); absent for a generation. */
  edit?: EditInputs;
  /** Previews to send while the job works (progress.ts), when it will succeed; 0 or absent for none. */
  partialImages?: number;
  /** Told the job's progress step by step (progress.ts); without it the delay is one wait. */
  onProgress?: (progress: UpstreamProgress) => void;
}

export type ProviderOutcome =
  | { ok: true; images: Buffer[] }
  | { ok: false; kind: "refused" | "failed"; message: string };

export const SANDBOX_REFUSED_MESSAGE = "The sandbox model refused the prompt ([sandbox:refuse])";
export const SANDBOX_FAILED_MESSAGE = "The sandbox model failed the job ([sandbox:fail])";

/**
 * Runs one sandbox job. An abort rejects with the signal's reason, as a real
 * upstream call would, rather than becoming a refused or failed outcome.
 */
export async function generateWithSandbox(req: SandboxRequest): Promise<ProviderOutcome> {
  // Checked before the delay so a bad request never waits minutes to fail.
  assertSandboxSize(req.width, req.height);
  if (!Number.isInteger(req.n) || req.n < 1) throw new RangeError(`n must be a positive integer, got ${req.n}`);
  const directives = parseSandboxDirectives(req.prompt);
  // Several delay directives do not add up: the longest one wins, so the cap stays obvious.
  const delayMs = Math.max(0, ...directives.map((d) => (d.kind === "delay" ? d.ms : 0)));
  const failing = directives.some((d) => d.kind === "refuse" || d.kind === "fail");
  // The first image is made before the wait when previews of it are to be shown during it.
  const previewCount = failing || !req.onProgress ? 0 : (req.partialImages ?? 0);
  const first = previewCount > 0 ? await renderImage(req, 0) : undefined;
  // A job with neither a delay nor previews reports nothing: it is over before anyone could look.
  if (req.onProgress && (delayMs > 0 || first)) await workWithProgress({ delayMs, signal: req.signal, onProgress: req.onProgress, previews: first ? { of: first, count: previewCount } : null });
  else await abortableDelay(delayMs, req.signal);

  if (directives.some((d) => d.kind === "refuse")) {
    return { ok: false, kind: "refused", message: SANDBOX_REFUSED_MESSAGE };
  }
  if (directives.some((d) => d.kind === "fail")) {
    return { ok: false, kind: "failed", message: SANDBOX_FAILED_MESSAGE };
  }

  const images: Buffer[] = [];
  for (let index = 0; index < req.n; index++) {
    // A 4K render takes about a second, so a cancelled job stops between images.
    req.signal.throwIfAborted();
    images.push(index === 0 && first ? first : await renderImage(req, index));
  }
  return { ok: true, images };
}

function renderImage(req: SandboxRequest, index: number): Promise<Buffer> {
  return req.edit ? editSandboxPng(req.edit, req.prompt, req.width, req.height, index) : renderSandboxPng(variantSeed(req.prompt, index), req.width, req.height);
}

/** The first image is exactly the prompt's own picture; later ones get a distinct seed so n images differ. */
function variantSeed(prompt: string, index: number): string {
  return index === 0 ? prompt : `${prompt}\u0000${index}`;
}
