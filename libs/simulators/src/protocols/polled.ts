import { randomUUID } from "node:crypto";
import type { Effective, SimulatorCore } from "../server.ts";

// Jobs of the polled protocols (Black Forest Labs, Replicate): submitted, polled until
// ready, then their images are downloaded from URLs.

export interface PolledJob {
  id: string;
  prompt: string;
  effective: Effective;
  asked: { width: number; height: number };
  n: number;
  readyAt: number;
  polls: number;
  pollsNeeded: number;
  urls?: string[];
  input: unknown;
}

const MAX_JOBS = 5000;

export class PolledJobs {
  readonly #jobs = new Map<string, PolledJob>();
  constructor(private readonly sim: SimulatorCore) {}

  submit(prompt: string, effective: Effective, asked: { width: number; height: number }, n: number, input: unknown): PolledJob {
    const behaviour = this.sim.behaviour;
    const job: PolledJob = {
      id: randomUUID(),
      prompt,
      effective,
      asked,
      n,
      input,
      readyAt: Date.now() + effective.delayMs,
      polls: 0,
      pollsNeeded: effective.mode === "slow-poll" ? behaviour.slowPolls : behaviour.pollsBeforeReady,
    };
    this.#jobs.set(job.id, job);
    if (this.#jobs.size > MAX_JOBS) this.#jobs.delete(this.#jobs.keys().next().value!);
    return job;
  }

  get(id: string): PolledJob | undefined {
    return this.#jobs.get(id);
  }

  /** Counts a poll and says whether the job has finished (in whatever way its mode says). */
  poll(job: PolledJob): boolean {
    job.polls += 1;
    return job.polls > job.pollsNeeded && Date.now() >= job.readyAt;
  }

  /** Renders the images once and hosts them for download. */
  async results(job: PolledJob): Promise<string[]> {
    job.urls ??= await Promise.all(
      Array.from({ length: job.n }, async (_, index) => this.sim.hostFile(await this.sim.render(job.asked, job.effective, `${job.prompt}#${index}`))),
    );
    return job.urls;
  }
}
