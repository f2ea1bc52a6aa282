import { closeSync, fsyncSync, mkdirSync, openSync } from "node:fs";
import { readdir, rm, type FileHandle } from "node:fs/promises";
import { join, resolve } from "node:path";
import { ImageFiles, openIfExists } from "./image-files.ts";
import { SegmentFile, type SegmentLimits } from "./segment-file.ts";
import {
  DELETED_FLAGS,
  DELETED_FLAG_OFFSET,
  MAX_IMAGE_BYTES,
  RECORD_HEADER_BYTES,
  SEGMENT_NAME,
  decodeHeader,
  encodeHeader,
  newRecordRandom,
  parseSegmentImageId,
  segmentCreatedAtMs,
  segmentImageId,
  type RecordHeader,
  type SegmentLocation,
} from "./segment-record.ts";
import { assertImageId, READ_CHUNK_BYTES, type AddOptions, type ImageStore, type StoredImage } from "./store.ts";

/**
 * Images on local disk, appended to segment files (`<dir>/segments/<name>.seg`)
 * whose flushes are shared between the images written at the same time. The id
 * says where an image is (segment-record.ts). A segment is removed as a whole
 * once every image in it has expired; deleting one image marks it deleted.
 * Images stored as their own files by earlier versions are still read and deleted.
 */
export interface SegmentStoreOptions extends Partial<SegmentLimits> {
  now?: () => number;
}

const DEFAULT_LIMITS: SegmentLimits = { maxBytes: 128 * 1024 * 1024, maxAgeMs: 10 * 60_000 };
/** A segment past its age limit may still be finishing writes claimed just before it; reclaim waits this much longer. */
const CLOSE_GRACE_MS = 60_000;

export class SegmentImageStore implements ImageStore {
  readonly #segmentsDir: string;
  readonly #files: ImageFiles;
  readonly #limits: SegmentLimits;
  readonly #now: () => number;
  #active: Promise<SegmentFile> | null = null;
  /** When each closed segment's last image expires, once read; a closed segment never changes. */
  readonly #lastExpiry = new Map<string, number>();

  constructor(dir: string, options: SegmentStoreOptions = {}) {
    const root = resolve(dir);
    this.#segmentsDir = join(root, "segments");
    // Synchronous on purpose: it runs once at start-up and a bad directory should stop the service there.
    mkdirSync(this.#segmentsDir, { recursive: true });
    // The segments directory's own entry must outlast a power cut too (each segment's entry is flushed as it is made).
    flushDirectorySync(root);
    this.#files = new ImageFiles(root);
    this.#limits = { maxBytes: options.maxBytes ?? DEFAULT_LIMITS.maxBytes, maxAgeMs: options.maxAgeMs ?? DEFAULT_LIMITS.maxAgeMs };
    this.#now = options.now ?? Date.now;
  }

  async add(bytes: Buffer, contentType: string, options: AddOptions): Promise<string> {
    if (bytes.length === 0 || bytes.length > MAX_IMAGE_BYTES) throw new Error(`An image must have 1 to ${MAX_IMAGE_BYTES} bytes, not ${bytes.length}`);
    const random = newRecordRandom();
    // Before a place is claimed: an unknown content type throws here, with nothing written.
    const header = encodeHeader({ contentType, length: bytes.length, expiresAtMs: options.expiresAt.getTime(), random });
    const { segment, offset } = await this.#claim(RECORD_HEADER_BYTES + bytes.length);
    try {
      await segment.writeDurably([header, bytes], offset);
    } finally {
      segment.release();
    }
    return segmentImageId({ random, segment: segment.name, offset });
  }

  /** The caller must read the stream to the end or destroy it; either closes the file. */
  async open(imageId: string): Promise<StoredImage | null> {
    assertImageId(imageId);
    const location = parseSegmentImageId(imageId);
    if (location === null) return this.#files.open(imageId);
    const handle = await this.#openSegment(location.segment, "r");
    if (handle === null) return null;
    try {
      const record = await readRecordHeader(handle, location);
      if (record === null || record.deleted) {
        await handle.close();
        return null;
      }
      const start = location.offset + RECORD_HEADER_BYTES;
      return { contentType: record.contentType, size: record.length, stream: handle.createReadStream({ start, end: start + record.length - 1, highWaterMark: READ_CHUNK_BYTES }) };
    } catch (error) {
      await handle.close();
      throw error;
    }
  }

  /** Marks the image deleted; its segment's space comes back when reclaim() removes the whole segment. */
  async delete(imageId: string): Promise<void> {
    assertImageId(imageId);
    const location = parseSegmentImageId(imageId);
    if (location === null) return this.#files.delete(imageId);
    const handle = await this.#openSegment(location.segment, "r+");
    if (handle === null) return;
    try {
      const record = await readRecordHeader(handle, location);
      if (record !== null && !record.deleted) await handle.write(DELETED_FLAGS, 0, 1, location.offset + DELETED_FLAG_OFFSET);
    } finally {
      await handle.close();
    }
  }

  /** Removes every closed segment whose images have all expired. Replicas sharing the directory may overlap. */
  async reclaim(): Promise<number> {
    let removed = 0;
    const active = this.#active ? await this.#active.catch(() => null) : null;
    for (const segment of await this.#segmentNames()) {
      if (segment === active?.name || this.#now() < segmentCreatedAtMs(segment) + this.#limits.maxAgeMs + CLOSE_GRACE_MS) continue;
      const lastExpiry = this.#lastExpiry.get(segment) ?? (await this.#readLastExpiry(segment));
      if (lastExpiry === null || this.#now() < lastExpiry) continue;
      await rm(join(this.#segmentsDir, `${segment}.seg`), { force: true });
      this.#lastExpiry.delete(segment);
      removed += 1;
    }
    return removed;
  }

  /** Stops taking images. The current segment closes now, or, with writes still in flight, once they end (stop drains the jobs first). */
  async close(): Promise<void> {
    const active = this.#active;
    this.#active = null;
    await (await active?.catch(() => null))?.retire();
  }

  /** A place for a record of `size` bytes: in the current segment, or in a new one when it is full, old or failed. */
  async #claim(size: number): Promise<{ segment: SegmentFile; offset: number }> {
    for (;;) {
      const current = (this.#active ??= SegmentFile.create(this.#segmentsDir, this.#limits, this.#now()));
      let segment: SegmentFile;
      try {
        segment = await current;
      } catch (error) {
        if (this.#active === current) this.#active = null;
        throw error;
      }
      const offset = segment.claim(size, this.#now());
      if (offset !== null) return { segment, offset };
      if (this.#active === current) {
        this.#active = null;
        void segment.retire();
      }
    }
  }

  #openSegment(segment: string, flags: "r" | "r+"): Promise<FileHandle | null> {
    return openIfExists(join(this.#segmentsDir, `${segment}.seg`), flags);
  }

  async #segmentNames(): Promise<string[]> {
    const names = await readdir(this.#segmentsDir);
    return names.filter((name) => name.endsWith(".seg")).map((name) => name.slice(0, -4)).filter((name) => SEGMENT_NAME.test(name));
  }

  /** The latest expiry of any image in a closed segment, read from its headers once. */
  async #readLastExpiry(segment: string): Promise<number | null> {
    const handle = await this.#openSegment(segment, "r");
    if (handle === null) return null;
    try {
      let lastExpiry = 0;
      await walkHeaders(handle, (record) => (lastExpiry = Math.max(lastExpiry, record.expiresAtMs)));
      this.#lastExpiry.set(segment, lastExpiry);
      return lastExpiry;
    } finally {
      await handle.close();
    }
  }
}

const WALK_WINDOW_BYTES = 256 * 1024;

/**
 * Visits a segment's record headers in order, reading it in 256-kB windows (one
 * read covers many small images). A torn record at the end (the process died
 * mid-write) was never handed out, so the walk stops there.
 */
async function walkHeaders(handle: FileHandle, visit: (record: RecordHeader) => void): Promise<void> {
  const { size } = await handle.stat();
  const window = Buffer.alloc(WALK_WINDOW_BYTES);
  let windowStart = 0;
  let windowLength = 0;
  for (let offset = 0; offset + RECORD_HEADER_BYTES <= size; ) {
    if (offset + RECORD_HEADER_BYTES > windowStart + windowLength) {
      windowStart = offset;
      windowLength = (await handle.read(window, 0, WALK_WINDOW_BYTES, offset)).bytesRead;
      if (windowLength < RECORD_HEADER_BYTES) return;
    }
    const record = decodeHeader(window.subarray(offset - windowStart, offset - windowStart + RECORD_HEADER_BYTES));
    if (record === null) return;
    visit(record);
    offset += RECORD_HEADER_BYTES + record.length;
  }
}

/** The record the id points at, or null when it is not there whole (never written, torn, or another image's). */
async function readRecordHeader(handle: FileHandle, location: SegmentLocation): Promise<RecordHeader | null> {
  const header = Buffer.alloc(RECORD_HEADER_BYTES);
  const { bytesRead } = await handle.read(header, 0, RECORD_HEADER_BYTES, location.offset);
  const record = bytesRead === RECORD_HEADER_BYTES ? decodeHeader(header) : null;
  if (record === null || record.random !== location.random) return null;
  const { size } = await handle.stat();
  return location.offset + RECORD_HEADER_BYTES + record.length <= size ? record : null;
}

function flushDirectorySync(dir: string): void {
  const fd = openSync(dir, "r");
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
