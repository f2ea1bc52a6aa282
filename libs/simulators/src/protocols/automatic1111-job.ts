import type { Effective, SimulatorCore } from "../server.ts";

// The one job an AUTOMATIC1111 server runs at a time (its queue_lock): the next request
// waits for the running one. The job steps through batch_size × n_iter images in n_iter
// rounds of `steps` sampling steps; /progress reads its state, /interrupt ends it early,
// and then, as A1111 does, the request is answered with the images of the rounds begun.
// The job goes on when its client leaves (A1111 does not notice), until it ends, is
// interrupted or the simulator closes.

export interface JobShape {
  kind: "txt2img" | "img2img";
  width: number;
  height: number;
  steps: number;
  batchSize: number;
  rounds: number;
  effective: Effective;
}

export class A1111Job {
  /** Rounds begun (A1111's job_no counts from 0). */
  round = 0;
  step = 0;
  readonly startedAt = Date.now();
  readonly timestamp = new Date().toISOString().replace(/\D/g, "").slice(0, 14);
  readonly #interrupted = new AbortController();

  constructor(readonly shape: JobShape) {}

  get interrupted(): boolean {
    return this.#interrupted.signal.aborted;
  }

  interrupt(): void {
    this.#interrupted.abort();
  }

  /** The sampling, spread over the model's latency. */
  async run(sim: SimulatorCore): Promise<void> {
    const { steps, rounds, effective } = this.shape;
    const stepMs = effective.delayMs / (steps * rounds);
    const stop = AbortSignal.any([this.#interrupted.signal, sim.closing]);
    for (this.round = 0; this.round < rounds; this.round += 1) {
      for (this.step = 0; this.step < steps; ) {
        await pause(stepMs, stop);
        if (stop.aborted) return;
        this.step += 1;
      }
    }
    this.round = rounds - 1;
  }

  /** Images the answer carries: every round's, or, interrupted, those of the rounds begun. */
  get imagesMade(): number {
    return this.shape.batchSize * Math.min(this.round + 1, this.shape.rounds);
  }

  /** A1111's progress formula (modules/api/api.py progressapi): rounds done plus the current round's steps, from 0.01. */
  get progress(): number {
    const { rounds, steps } = this.shape;
    return Math.min(1, 0.01 + this.round / rounds + (1 / rounds) * (this.step / steps));
  }
}

/** Runs jobs one at a time, in arrival order. */
export class JobQueue {
  #tail: Promise<void> = Promise.resolve();
  current: A1111Job | null = null;

  /** Runs the job, then `answer` (the images are encoded inside the lock, as A1111 does), in turn. */
  run<T>(job: A1111Job, sim: SimulatorCore, answer: () => Promise<T>): Promise<T> {
    const turn = this.#tail.then(async () => {
      this.current = job;
      try {
        await job.run(sim);
        return await answer();
      } finally {
        this.current = null;
      }
    });
    this.#tail = turn.then(
      () => undefined,
      () => undefined,
    );
    return turn;
  }
}

function pause(ms: number, stop: AbortSignal): Promise<void> {
  if (ms <= 0 || stop.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      stop.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    stop.addEventListener("abort", done, { once: true });
  });
}
