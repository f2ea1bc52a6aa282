import { parseSandboxDirectives } from "./directives.ts";
import { assertSandboxSize, renderSandboxPng } from "./render.ts";
import { editSandboxPng } from "./edit.ts";
import type { EditInputs } from "../edit-inputs.ts";

export interface SandboxRequest {
  prompt: string;
  width: number;
  height: number;
  n: number;
  signal: AbortSignal;
  /** An image edit's inputs (edit.ts); absent for a generation. */
  edit?: EditInputs;
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
  await abortableDelay(delayMs, req.signal);

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
    images.push(
      req.edit
        ? await editSandboxPng(req.edit, req.prompt, req.width, req.height, index)
        : await renderSandboxPng(variantSeed(req.prompt, index), req.width, req.height),
    );
  }
  return { ok: true, images };
}

/** The first image is exactly the prompt's own picture; later ones get a distinct seed so n images differ. */
function variantSeed(prompt: string, index: number): string {
  return index === 0 ? prompt : `${prompt}\u0000${index}`;
}

function abortableDelay(ms: number, signal: AbortSignal): Promise<void> {
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
