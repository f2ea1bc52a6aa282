import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";

// The shared flush's rule, watched at the system calls: a record counts as stored
// only after an fdatasync that started once it was written; one fdatasync serves
// many records; and once a flush fails, the segment is never trusted again.

const calls = vi.hoisted(() => ({ events: [] as string[], failNextSync: false }));

vi.mock("node:fs", async (importOriginal) => {
  const fs = await importOriginal<typeof import("node:fs")>();
  let syncs = 0;
  return {
    ...fs,
    writev: (fd: number, buffers: Buffer[], position: number, done: (error: Error | null) => void) =>
      fs.writev(fd, buffers, position, (error) => {
        calls.events.push(`written ${position}`);
        done(error);
      }),
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
    for (const offset of offsets) {
      const written = at(`written ${offset}`);
      const stored = at(`stored ${offset}`);
      const covering = calls.events.slice(written, stored).filter((event) => /^sync \d+ starts$/.test(event));
      // A flush started between the write and the report, and it had ended by the report.
      expect(covering.length, `record at ${offset}`).toBeGreaterThan(0);
      expect(calls.events.slice(written, stored)).toContain(covering[0]!.replace("starts", "ends"));
    }
    expect(calls.events.filter((event) => event.endsWith("starts")).length).toBeLessThan(50);
    const file = await readFile(join(dir, `${segment.name}.seg`));
    expect(file.length).toBe(100 * 64);
    expect(file[64 * 42]).toBe(42);
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
