import type { UpstreamProgress } from "../types.ts";

// One job's progress when n is split into several prompts (upstream.ts batches): ComfyUI
// runs them one after another, so the job is as far as the mean of its prompts, which
// rises steadily where each prompt's own fraction would start again from zero.

export class JobProgress {
  readonly #fractions: number[];
  #next = 0;

  constructor(
    prompts: number,
    private readonly report: ((progress: UpstreamProgress) => void) | undefined,
  ) {
    this.#fractions = new Array<number>(Math.max(1, prompts)).fill(0);
  }

  /** The listener of the next prompt of the job. */
  forPrompt(): (progress: UpstreamProgress) => void {
    const index = Math.min(this.#next++, this.#fractions.length - 1);
    return (progress) => {
      if (progress.fraction === undefined) return this.report?.(progress);
      this.#fractions[index] = Math.max(this.#fractions[index]!, progress.fraction);
      this.report?.({ fraction: this.#fractions.reduce((sum, value) => sum + value, 0) / this.#fractions.length });
    };
  }
}
