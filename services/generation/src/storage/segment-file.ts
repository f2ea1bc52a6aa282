import { close, fdatasync, fsync, open, writev } from "node:fs";
import { join } from "node:path";
import { newSegmentName } from "./segment-record.ts";

// One segment file being written by this process: records go in at offsets
// handed out in order, and their writes and their flushes to disk are shared. A new
// file with its own fsync cost thread-pool CPU and a disk flush per image
// (docs/design-choices.md#segment-files-with-a-shared-fdatasync); one fdatasync now covers every
// record written before it started, and the records that arrive while a write is
// in the thread pool go together in the next one (a pwritev per run of adjacent
// records), so a burst of images costs a few trips through the thread pool, not
// one each.

export interface SegmentLimits {
  /** A segment takes no new record that would end past this many bytes (a lone larger image still fits in a fresh one). */
  maxBytes: number;
  /** Nor any once it is this old, so every segment is closed, and can be reclaimed, soon after its name's time. */
  maxAgeMs: number;
}

interface Waiter {
  resolve(): void;
  reject(error: unknown): void;
}

interface PendingWrite extends Waiter {
  buffers: Buffer[];
  offset: number;
  size: number;
}

const call = <T>(start: (done: (error: NodeJS.ErrnoException | null, value?: T) => void) => void) =>
  new Promise<T>((resolve, reject) => start((error, value) => (error ? reject(error) : resolve(value as T))));

export class SegmentFile {
  #next = 0;
  #users = 0;
  #retired = false;
  /** After a failed write or flush the file's state on disk is unknown: nothing more is claimed in it, and every later flush fails. */
  #failure: unknown = null;
  #syncWaiters: Waiter[] = [];
  #syncing = false;
  #pendingWrites: PendingWrite[] = [];
  #writing = false;
  #closed: Promise<void> | null = null;

  private constructor(
    readonly name: string,
    readonly path: string,
    private readonly fd: number,
    private readonly createdAtMs: number,
    private readonly limits: SegmentLimits,
  ) {}

  /** Creates a new segment (never an existing one) and flushes its directory entry, so the name outlives a power cut. */
  static async create(dir: string, limits: SegmentLimits, nowMs: number): Promise<SegmentFile> {
    for (;;) {
      const name = newSegmentName(nowMs);
      const path = join(dir, `${name}.seg`);
      let fd: number;
      try {
        fd = await call<number>((done) => open(path, "wx", 0o600, done));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === "EEXIST") continue;
        throw error;
      }
      try {
        await flushDirectory(dir);
      } catch (error) {
        await call((done) => close(fd, done));
        throw error;
      }
      return new SegmentFile(name, path, fd, nowMs, limits);
    }
  }

  /** The offset for a record of `size` bytes, or null when this segment takes no more (full, old, retired or failed). */
  claim(size: number, nowMs: number): number | null {
    if (this.#retired || this.#failure !== null) return null;
    const full = this.#next > 0 && this.#next + size > this.limits.maxBytes;
    if (full || nowMs - this.createdAtMs >= this.limits.maxAgeMs) return null;
    const offset = this.#next;
    this.#next += size;
    this.#users += 1;
    return offset;
  }

  /** Writes a claimed record and resolves once it is on disk. Call release() after, whatever happened. */
  async writeDurably(buffers: Buffer[], offset: number): Promise<void> {
    await this.#written(buffers, offset);
    await this.#flushed();
  }

  /** Resolves once the record is written (not yet flushed); it goes with the others waiting for the next write. */
  #written(buffers: Buffer[], offset: number): Promise<void> {
    return new Promise((resolve, reject) => {
      const size = buffers.reduce((sum, buffer) => sum + buffer.length, 0);
      this.#pendingWrites.push({ buffers, offset, size, resolve, reject });
      if (!this.#writing) this.#writeWaiting();
    });
  }

  #writeWaiting(): void {
    const batch = this.#pendingWrites;
    this.#pendingWrites = [];
    this.#writing = batch.length > 0;
    if (batch.length === 0) return;
    void Promise.all(adjacentRuns(batch).map((run) => this.#writeRun(run))).then(() => this.#writeWaiting());
  }

  /** One pwritev for records that lie end to end; a failed write fails them all and the segment with them. */
  async #writeRun(run: PendingWrite[]): Promise<void> {
    try {
      if (this.#failure !== null) throw this.#failure;
      const buffers = run.length === 1 ? run[0]!.buffers : run.flatMap((write) => write.buffers);
      const size = run.reduce((sum, write) => sum + write.size, 0);
      const written = await call<number>((done) => writev(this.fd, buffers, run[0]!.offset, done));
      // libuv writes on after a short write and stops only at an error, which then comes back as a short count.
      if (written !== size) throw Object.assign(new Error(`short write: ${written} of ${size} bytes`), { code: "EIO" });
    } catch (error) {
      this.#failure ??= error;
      for (const write of run) write.reject(error);
      return;
    }
    for (const write of run) write.resolve();
  }

  release(): void {
    this.#users -= 1;
    if (this.#retired && this.#users === 0) void this.#close();
  }

  /** Takes no more records; the file closes once the records in flight are flushed. */
  retire(): Promise<void> {
    this.#retired = true;
    return this.#users === 0 ? this.#close() : Promise.resolve();
  }

  /**
   * Resolves after an fdatasync that started once this record was written. A
   * flush already running may have missed it, so waiters queue for the next
   * one, which then covers all of them.
   */
  #flushed(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.#syncWaiters.push({ resolve, reject });
      if (!this.#syncing) this.#flushWaiting();
    });
  }

  #flushWaiting(): void {
    const batch = this.#syncWaiters;
    this.#syncWaiters = [];
    this.#syncing = true;
    // A flush that once failed must not be trusted again: the kernel may have dropped the dirty pages.
    if (this.#failure !== null) return this.#settle(batch, this.#failure);
    fdatasync(this.fd, (error) => {
      if (error) this.#failure ??= error;
      this.#settle(batch, error);
    });
  }

  #settle(batch: Waiter[], error: unknown): void {
    for (const waiter of batch) {
      if (error) waiter.reject(error);
      else waiter.resolve();
    }
    if (this.#syncWaiters.length > 0) this.#flushWaiting();
    else this.#syncing = false;
  }

  #close(): Promise<void> {
    this.#closed ??= call((done) => close(this.fd, done));
    return this.#closed;
  }
}

async function flushDirectory(dir: string): Promise<void> {
  const fd = await call<number>((done) => open(dir, "r", done));
  try {
    await call((done) => fsync(fd, done));
  } finally {
    await call((done) => close(fd, done));
  }
}

/** The writes in offset order, cut wherever one does not start where the one before ended. */
function adjacentRuns(writes: PendingWrite[]): PendingWrite[][] {
  const sorted = writes.length === 1 ? writes : [...writes].sort((a, b) => a.offset - b.offset);
  const runs: PendingWrite[][] = [];
  let run: PendingWrite[] = [];
  for (const write of sorted) {
    const last = run[run.length - 1];
    if (last && last.offset + last.size !== write.offset) {
      runs.push(run);
      run = [];
    }
    run.push(write);
  }
  runs.push(run);
  return runs;
}
