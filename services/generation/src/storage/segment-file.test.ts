import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";

// The shared flush's rule, watched at the system calls: a record counts as stored
// only after an fdatasync that started once it was written; one fdatasync serves
// many records, and one pwritev the records waiting together; once a flush fails,
// the segment is never trusted again.

const calls = vi.hoisted(() => ({ events: [] as string[], failNextSync: false, failNextWrite: false }));

vi.mock("node:fs", async (importOriginal) => {
  const fs = await importOriginal<typeof import("node:fs")>();
  let syncs = 0;
  return {
    ...fs,
    writev: (fd: number, buffers: Buffer[], position: number, done: (error: Error | null, written?: number) => void) => {
      if (calls.failNextWrite) {
        calls.failNextWrite = false;
        setImmediate(() => done(Object.assign(new Error("ENOSPC: no space left on device, write"), { code: "ENOSPC" })));
        return;
      }
      fs.writev(fd, buffers, position, (error, written) => {
        calls.events.push(`written ${position} to ${position + written}`);
        done(error, written);
      });
    },
    fdatasync: (fd: number, done: (error: Error | null) => void) => {
      const sync = ++syncs;
      calls.events.push(`sync ${sync} starts`);
      if (calls.failNextSync) {
        calls.failNextSync = false;
        const error = Object.assign(new Error("EIO: i/o error, fdatasync"), { code: "EIO" });
        setImmediate(() => {
          calls.events.push(`sync ${sync} failed`);
          done(error);
        });
        return;
      }
      fs.fdatasync(fd, (error) => {
        calls.events.push(`sync ${sync} ends`);
        done(error);
      });
    },
  };
});

const { SegmentFile } = await import("./segment-file.ts");

const LIMITS = { maxBytes: 1 << 20, maxAgeMs: 60_000 };

describe("SegmentFile", () => {
  let dir: string;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), "orvado-segment-file-"));
    calls.events.length = 0;
    calls.failNextSync = false;
    calls.failNextWrite = false;
  });

  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  async function writeRecord(segment: Awaited<ReturnType<typeof SegmentFile.create>>, bytes: Buffer): Promise<number> {
    const offset = segment.claim(bytes.length, Date.now());
    if (offset === null) throw new Error("no room");
    try {
      await segment.writeDurably([bytes], offset);
      calls.events.push(`stored ${offset}`);
      return offset;
    } finally {
      segment.release();
    }
  }

  it("reports each record stored only after a flush that started after it was written, with far fewer flushes than records", async () => {
    const segment = await SegmentFile.create(dir, LIMITS, Date.now());
    const offsets = await Promise.all(Array.from({ length: 100 }, (_, index) => writeRecord(segment, Buffer.alloc(64, index))));
    await segment.retire();

    const at = (event: string) => calls.events.indexOf(event);
    const writeOf = (offset: number) =>
      calls.events.findIndex((event) => {
        const match = /^written (\d+) to (\d+)$/.exec(event);
        return match !== null && Number(match[1]) <= offset && offset < Number(match[2]);
      });
    for (const offset of offsets) {
      const written = writeOf(offset);
      expect(written, `record at ${offset}`).toBeGreaterThanOrEqual(0);
      const stored = at(`stored ${offset}`);
      const covering = calls.events.slice(written, stored).filter((event) => /^sync \d+ starts$/.test(event));
      // A flush started between the write and the report, and it had ended by the report.
      expect(covering.length, `record at ${offset}`).toBeGreaterThan(0);
      expect(calls.events.slice(written, stored)).toContain(covering[0]!.replace("starts", "ends"));
    }
    expect(calls.events.filter((event) => event.endsWith("starts")).length).toBeLessThan(50);
    // The records that waited while a write was in the thread pool went in one pwritev.
    expect(calls.events.filter((event) => event.startsWith("written")).length).toBeLessThan(50);
    const file = await readFile(join(dir, `${segment.name}.seg`));
    expect(file.length).toBe(100 * 64);
    expect(file[64 * 42]).toBe(42);
  });

  it("writes records handed in out of their offsets' order, and records with a gap between them, each where it was claimed", async () => {
    const segment = await SegmentFile.create(dir, LIMITS, Date.now());
    const records = Array.from({ length: 12 }, (_, index) => Buffer.alloc(10 + index, index));
    const offsets = records.map((bytes) => segment.claim(bytes.length, Date.now())!);
    // Records 0, 1 and 2 first; then the rest backwards, without record 6 (its writer is still busy).
    const first = [0, 1, 2].map((index) => segment.writeDurably([records[index]!.subarray(0, 4), records[index]!.subarray(4)], offsets[index]!));
    const rest = [11, 10, 9, 8, 7, 5, 4, 3].map((index) => segment.writeDurably([records[index]!], offsets[index]!));
    await Promise.all([...first, ...rest]);
    await segment.writeDurably([records[6]!], offsets[6]!);
    for (let index = 0; index < records.length; index += 1) segment.release();
    await segment.retire();
    const file = await readFile(join(dir, `${segment.name}.seg`));
    records.forEach((bytes, index) => expect(file.subarray(offsets[index]!, offsets[index]! + bytes.length), `record ${index}`).toEqual(bytes));
    // Record 0 went alone; the others waiting for it went in the next write, as two runs (1-5 and 7-11); then record 6.
    const end = (index: number) => offsets[index]! + records[index]!.length;
    const writes = calls.events.filter((event) => event.startsWith("written"));
    expect(writes).toHaveLength(4);
    expect(writes[0]).toBe(`written 0 to ${end(0)}`);
    // The two runs go to the thread pool together and may finish in either order.
    expect(writes.slice(1, 3).sort()).toEqual([`written ${offsets[1]} to ${end(5)}`, `written ${offsets[7]} to ${end(11)}`].sort());
    expect(writes[3]).toBe(`written ${offsets[6]} to ${end(6)}`);
  });

  it("after a failed write, fails every record of it and every later one, and takes no more", async () => {
    const segment = await SegmentFile.create(dir, LIMITS, Date.now());
    calls.failNextWrite = true;
    const first = writeRecord(segment, Buffer.from("first"));
    const waiting = [writeRecord(segment, Buffer.from("second")), writeRecord(segment, Buffer.from("third"))];
    await expect(first).rejects.toMatchObject({ code: "ENOSPC" });
    for (const record of waiting) await expect(record).rejects.toMatchObject({ code: "ENOSPC" });
    expect(segment.claim(10, Date.now())).toBeNull();
    await segment.retire();
  });

  it("after a failed flush, fails every record waiting on it and takes no more", async () => {
    const segment = await SegmentFile.create(dir, LIMITS, Date.now());
    calls.failNextSync = true;
    await expect(writeRecord(segment, Buffer.from("lost"))).rejects.toMatchObject({ code: "EIO" });
    expect(segment.claim(10, Date.now())).toBeNull();
    await segment.retire();
  });

  it("takes nothing once retired or past its age, and a lone record larger than a segment only when empty", async () => {
    const now = Date.now();
    const segment = await SegmentFile.create(dir, { maxBytes: 100, maxAgeMs: 1000 }, now);
    expect(segment.claim(500, now)).toBe(0);
    segment.release();
    expect(segment.claim(1, now)).toBeNull();
    const young = await SegmentFile.create(dir, { maxBytes: 100, maxAgeMs: 1000 }, now);
    expect(young.claim(10, now + 1000)).toBeNull();
    const retired = await SegmentFile.create(dir, { maxBytes: 100, maxAgeMs: 1000 }, now);
    await retired.retire();
    expect(retired.claim(10, now)).toBeNull();
    await Promise.all([segment.retire(), young.retire()]);
  });
});
