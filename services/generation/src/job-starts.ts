import type { SharedCalls } from "@orvado/core";
import type { JobStart } from "./job-store.ts";

// A job's start row ('running' in generation.jobs) is written once the job has run for
// START_ROW_DELAY_MS; a job that ends sooner writes its whole row with its outcome, in
// the outcome's own statement (docs/architecture.md#one-request-step-by-step). So a
// quick job costs one statement fewer, and a model's 10-70 s job still shows as
// running within a second of its start. Nothing waits for the row before the
// outcome: no client has the request id until the answer (docs/api.md#job-lookup),
// an idempotent retry waits while its original's key is claimed (idempotency.ts), and
// a hold whose job has no row when its process dies is released by billing's sweeper
// at the hold's expiry, as for a row that could not be written.

/** How long a job runs before its start row is written, by default (GENERATION_START_ROW_DELAY_MS; 0 writes it at once). */
export const START_ROW_DELAY_MS = 1_000;
/** A flush also writes the rows due within this much more, so that rows go in batches. */
const FLUSH_SLACK_MS = 100;

/** One job's start row, from the job's start to its outcome. */
export interface StartRow {
  /**
   * At the job's end: its start, for the outcome's statement to write with the row, or
   * null when the row is written already. Rejects when that write failed.
   */
  end(): Promise<JobStart | null>;
  /**
   * After a failover: the job now runs on `channel`. Changes the row still to be written,
   * or calls `update` once the written one is committed. False when the row could not be
   * written (the job then ends as not started).
   */
  moveTo(channel: string, update: () => Promise<void>): Promise<boolean>;
}

interface Entry {
  start: JobStart;
  due: number;
  /** Set when the row's write is sent. */
  written?: Promise<void>;
}

export class DeferredStarts {
  readonly #pending = new Set<Entry>();
  #timer: NodeJS.Timeout | undefined;
  #timerAt = Number.POSITIVE_INFINITY;

  constructor(
    private readonly write: SharedCalls<JobStart, void>,
    private readonly delayMs: number = START_ROW_DELAY_MS,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Rows waiting for their delay (for tests and metrics). */
  get pending(): number {
    return this.#pending.size;
  }

  begin(start: JobStart): StartRow {
    const entry: Entry = { start, due: this.now() + this.delayMs };
    this.#pending.add(entry);
    this.#flushBy(entry.due);
    let ended: Promise<JobStart | null> | undefined;
    return {
      // The same answer however often it is asked (a job whose success statement failed asks again to record its failure).
      end: () => (ended ??= this.#pending.delete(entry) ? Promise.resolve(entry.start) : entry.written!.then(() => null)),
      moveTo: async (channel, update) => {
        if (this.#pending.has(entry)) {
          entry.start = { ...entry.start, channel };
          return true;
        }
        try {
          await entry.written;
        } catch {
          return false;
        }
        await update();
        return true;
      },
    };
  }

  #flushBy(at: number): void {
    if (this.#timer && this.#timerAt <= at) return;
    clearTimeout(this.#timer);
    this.#timerAt = at;
    this.#timer = setTimeout(() => this.#flush(), Math.max(1, at - this.now()));
    // The jobs waiting keep the process alive; their rows need not.
    this.#timer.unref();
  }

  #flush(): void {
    this.#timer = undefined;
    this.#timerAt = Number.POSITIVE_INFINITY;
    const cutoff = this.now() + FLUSH_SLACK_MS;
    let next = Number.POSITIVE_INFINITY;
    const due: Entry[] = [];
    for (const entry of this.#pending) {
      if (entry.due > cutoff) next = Math.min(next, entry.due);
      else due.push(entry);
    }
    for (const entry of due) this.#pending.delete(entry);
    // One statement for all of them (SharedCalls.callAll).
    this.write.callAll(due.map((entry) => entry.start)).forEach((written, index) => {
      due[index]!.written = written;
      // A failed write is the job's to report, at its end.
      written.catch(() => {});
    });
    if (Number.isFinite(next)) this.#flushBy(next);
  }
}
