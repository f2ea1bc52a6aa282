/**
 * Upstream answers being turned into stored images at once, bounded in number and
 * in bytes. An answer is admitted when its headers arrive (its declared length) or,
 * with no length given, once read. Until then its body is not read: a large one
 * stays in the kernel and the upstream (TCP flow control); a small one, which
 * arrived in one read, waits as its raw bytes. So while HOLD_BACK_AT answers wait,
 * the connections whose answers have not begun stop reading (holdBack) until none
 * waits: answers that come meanwhile stay in the kernel too. A job keeps its place
 * until its images are stored (docs/architecture.md#upstream-answers-in-memory).
 *
 * Why: answers that come back faster than the machine stores them (a hundred
 * photo-sized answers, or thousands of held jobs answered together) were each read,
 * decoded as text, parsed and decoded from base64 as they came, all at once
 * (docs/design-choices.md#answer-gate).
 */
export interface AnswerGateLimits {
  /** Answers admitted at once (those of the jobs between their upstream answer and their stored images). */
  answers: number;
  /** Their bytes at once; one answer larger than this is admitted alone. */
  bytes: number;
}

/**
 * The gate's limits in every generation process: enough answers at once to keep a
 * machine's cores busy storing them, and bytes that bound the memory a burst of
 * photo-sized answers holds (docs/architecture.md#upstream-answers-in-memory).
 */
export const ANSWER_GATE_LIMITS: AnswerGateLimits = { answers: 64, bytes: 256 * 1024 * 1024 };

/**
 * Answers smaller than this pass without a place: cheap to parse and hold, and what a
 * polling provider's status answers are, so a job polling for minutes holds no place
 * between its polls.
 */
export const UNGATED_ANSWER_BYTES = 16 * 1024;

/** A connection whose answer has not begun: its reads can be stopped and started again. */
export interface HeldBackReader {
  stop(): void;
  start(): void;
}

/**
 * Answers waiting for a place at which the connections still waiting for theirs stop reading,
 * until the line is empty: otherwise answers read and waiting raise the process's peak memory
 * when thousands of held jobs are answered together (docs/performance.md#what-happens-at-the-peak).
 */
export const HOLD_BACK_AT = 64;

interface Waiter {
  bytes: number;
  admit(): void;
}

export class AnswerGate {
  #answers = 0;
  #bytes = 0;
  readonly #waiting: Waiter[] = [];
  readonly #unanswered = new Set<HeldBackReader>();
  #holdingBack = false;

  constructor(private readonly limits: AnswerGateLimits) {
    for (const [name, value] of Object.entries(limits)) {
      if (!Number.isInteger(value) || value < 1) throw new Error(`the answer gate's ${name} limit must be a whole number ≥ 1 (got ${value})`);
    }
  }

  /** Answers waiting for a place now (the metrics' gauge). */
  get waiting(): number {
    return this.#waiting.length;
  }

  /** Answers admitted now, and their bytes. */
  get held(): { answers: number; bytes: number } {
    return { answers: this.#answers, bytes: this.#bytes };
  }

  /** One job's place: its first large answer waits for room; the job gives it back with release(). */
  pass(): AnswerPass {
    return new AnswerPass(this);
  }

  /** Registers a connection whose answer has not begun; the returned function takes it out (its answer began, or it closed). */
  holdBack(reader: HeldBackReader): () => void {
    this.#unanswered.add(reader);
    if (this.#holdingBack) reader.stop();
    return () => {
      if (this.#unanswered.delete(reader) && this.#holdingBack) reader.start();
    };
  }

  #checkHoldBack(): void {
    const hold = this.#holdingBack ? this.#waiting.length > 0 : this.#waiting.length >= HOLD_BACK_AT;
    if (hold === this.#holdingBack) return;
    this.#holdingBack = hold;
    for (const reader of this.#unanswered) hold ? reader.stop() : reader.start();
  }

  /** Waits in line (first come, first admitted) until `bytes` fit; a signal that aborts takes the waiter out of line. */
  enter(bytes: number, signal?: AbortSignal | null): Promise<void> {
    if (this.#waiting.length === 0 && this.#fits(bytes)) {
      this.#take(bytes);
      return Promise.resolve();
    }
    signal?.throwIfAborted();
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        bytes,
        admit: () => {
          signal?.removeEventListener("abort", onAbort);
          resolve();
        },
      };
      const onAbort = () => {
        const index = this.#waiting.indexOf(waiter);
        if (index >= 0) this.#waiting.splice(index, 1);
        this.#admitWaiting();
        reject(signal!.reason);
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#waiting.push(waiter);
      this.#checkHoldBack();
    });
  }

  /** Bytes a job that already has its place adds (a second answer, or more than declared): it never waits, so no holder waits on another. */
  grow(bytes: number): void {
    this.#bytes += bytes;
  }

  /** A job gives back its place and all the bytes it held. */
  leave(bytes: number): void {
    this.#answers -= 1;
    this.#bytes -= bytes;
    this.#admitWaiting();
  }

  /** An answer fits when there is room for it, or when nothing is admitted (one larger than the byte limit goes alone). */
  #fits(bytes: number): boolean {
    if (this.#answers === 0) return true;
    return this.#answers < this.limits.answers && this.#bytes + bytes <= this.limits.bytes;
  }

  #take(bytes: number): void {
    this.#answers += 1;
    this.#bytes += bytes;
  }

  #admitWaiting(): void {
    while (this.#waiting.length > 0 && this.#fits(this.#waiting[0]!.bytes)) {
      const next = this.#waiting.shift()!;
      this.#take(next.bytes);
      next.admit();
    }
    this.#checkHoldBack();
  }
}

const PLACE_GIVEN_UP = "the job gave back its answer place before the answer's turn came";

/**
 * A job's place in the gate: held from its first large answer until release(); released twice, it gives
 * back once. The job's own connections are never held back once it is in line or holds its place: the
 * place goes back only when all its calls are done (parallel batches, result images fetched after the
 * JSON), and the line moves only as places go back, so holding one of them back would wait on itself.
 */
export class AnswerPass {
  #bytes = 0;
  #held = false;
  #entering: Promise<void> | null = null;
  /** The job's connections registered for holding back, each with the function that takes it out of the gate's set. */
  readonly #readers = new Map<HeldBackReader, () => void>();
  /** Takes the job's first large answer out of line: release() while it waits. */
  #leaveLine: AbortController | null = null;

  constructor(private readonly gate: AnswerGate) {}

  /**
   * Before an answer of `bytes` is read (or, its length unknown, handed on): the job's
   * first large answer waits for its place; later ones (parallel batches, a result
   * image after its JSON) add their bytes at once.
   */
  async admit(bytes: number, signal?: AbortSignal | null): Promise<void> {
    if (bytes < UNGATED_ANSWER_BYTES) return;
    if (this.#held) return this.#grow(bytes);
    if (this.#entering) {
      // A parallel batch's answer while the first waits: it rides on the same place.
      await this.#entering;
      return this.#grow(bytes);
    }
    this.#exemptReaders();
    const leaveLine = new AbortController();
    const followSignal = () => leaveLine.abort(signal!.reason);
    if (signal?.aborted) followSignal();
    else signal?.addEventListener("abort", followSignal, { once: true });
    this.#leaveLine = leaveLine;
    try {
      this.#entering = this.gate.enter(bytes, leaveLine.signal).then(() => {
        // Given up (release()) while the place was on its way: it goes straight back.
        if (this.#leaveLine !== leaveLine) {
          this.gate.leave(bytes);
          throw new Error(PLACE_GIVEN_UP);
        }
        this.#held = true;
        this.#bytes += bytes;
      });
      await this.#entering;
    } finally {
      this.#entering = null;
      if (this.#leaveLine === leaveLine) this.#leaveLine = null;
      signal?.removeEventListener("abort", followSignal);
    }
  }

  /** See AnswerGate.holdBack; a job in line or holding its place is not held back. */
  holdBack(reader: HeldBackReader): () => void {
    if (this.#held || this.#entering) return () => {};
    const takeOut = this.gate.holdBack(reader);
    this.#readers.set(reader, takeOut);
    return () => {
      if (this.#readers.delete(reader)) takeOut();
    };
  }

  /** Takes the job's registered connections out of the gate's set, which starts any it had stopped. */
  #exemptReaders(): void {
    for (const takeOut of this.#readers.values()) takeOut();
    this.#readers.clear();
  }

  /**
   * Gives back the job's place, or takes its answer out of line: an answer whose connection was cut
   * while it waited fails its call, and a place granted after the job had ended would never come back.
   */
  release(): void {
    const waiting = this.#leaveLine;
    this.#leaveLine = null;
    waiting?.abort(new Error(PLACE_GIVEN_UP));
    if (!this.#held) return;
    this.#held = false;
    this.gate.leave(this.#bytes);
    this.#bytes = 0;
  }

  #grow(bytes: number): void {
    this.#bytes += bytes;
    this.gate.grow(bytes);
  }
}
