import { appendFile, mkdtemp, readdir, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SegmentImageStore, type SegmentStoreOptions } from "./segment-store.ts";
import { RECORD_HEADER_BYTES, parseSegmentImageId, segmentImageId } from "./segment-record.ts";
import { InvalidImageIdError, isImageId } from "./store.ts";
import { readAll } from "./test-support.ts";

const HOUR = 3_600_000;
const T0 = Date.parse("2026-11-21T12:00:00Z");

describe("SegmentImageStore", () => {
  let root: string;
  let dir: string;
  let clock: number;
  const stores: SegmentImageStore[] = [];
  const storeWith = (options: SegmentStoreOptions = {}) => {
    const store = new SegmentImageStore(dir, { now: () => clock, ...options });
    stores.push(store);
    return store;
  };
  const expiresIn = (ms: number) => ({ expiresAt: new Date(clock + ms) });
  const segmentFiles = async () => (await readdir(join(dir, "segments"))).sort();
  const contentOf = async (store: SegmentImageStore, imageId: string) => {
    const opened = await store.open(imageId);
    return opened === null ? null : (await readAll(opened.stream)).toString();
  };

  beforeEach(async () => {
    clock = T0;
    root = await mkdtemp(join(tmpdir(), "orvado-segments-"));
    // A directory that does not exist yet: the store creates it.
    dir = join(root, "nested", "images");
  });

  afterEach(async () => {
    for (const store of stores.splice(0)) await store.close();
    await rm(root, { recursive: true, force: true });
  });

  it("returns what was added, with its type and size, under an id that says where it is", async () => {
    const store = storeWith();
    const bytes = Buffer.from("not really a png, but bytes are bytes");
    const imageId = await store.add(bytes, "image/png", expiresIn(HOUR));
    expect(isImageId(imageId)).toBe(true);
    expect(parseSegmentImageId(imageId)).toMatchObject({ offset: 0 });

    const opened = await store.open(imageId);
    expect([opened?.contentType, opened?.size]).toEqual(["image/png", bytes.length]);
    expect((await readAll(opened!.stream)).equals(bytes)).toBe(true);
  });

  it("keeps each image's content type and bytes when many are added at once, in one shared segment", async () => {
    const store = storeWith();
    const types = ["image/png", "image/jpeg", "image/webp"];
    const added = await Promise.all(
      Array.from({ length: 200 }, async (_, index) => {
        const bytes = Buffer.alloc(100 + index, index);
        return { bytes, contentType: types[index % 3]!, imageId: await store.add(bytes, types[index % 3]!, expiresIn(HOUR)) };
      }),
    );
    expect(new Set(added.map((image) => image.imageId)).size).toBe(200);
    for (const image of added) {
      const opened = await store.open(image.imageId);
      expect(opened?.contentType).toBe(image.contentType);
      expect((await readAll(opened!.stream)).equals(image.bytes)).toBe(true);
    }
    expect(await segmentFiles()).toHaveLength(1);
  });

  it("reads images after a restart, and writes new ones to a new segment, never the old one", async () => {
    const before = storeWith();
    const old = await before.add(Buffer.from("before the restart"), "image/png", expiresIn(HOUR));
    const oldSegmentSize = (await stat(join(dir, "segments", (await segmentFiles())[0]!))).size;

    const after = storeWith();
    expect(await contentOf(after, old)).toBe("before the restart");
    const fresh = await after.add(Buffer.from("after"), "image/png", expiresIn(HOUR));
    expect(parseSegmentImageId(fresh)?.segment).not.toBe(parseSegmentImageId(old)?.segment);
    expect(await segmentFiles()).toHaveLength(2);
    expect((await stat(join(dir, "segments", `${parseSegmentImageId(old)!.segment}.seg`))).size).toBe(oldSegmentSize);
  });

  it("deletes one image and leaves its neighbours; deleting again is harmless", async () => {
    const store = storeWith();
    const [gone, kept] = [await store.add(Buffer.from("bye"), "image/png", expiresIn(HOUR)), await store.add(Buffer.from("stay"), "image/png", expiresIn(HOUR))];
    await store.delete(gone);
    expect(await store.open(gone)).toBeNull();
    await store.delete(gone);
    expect(await contentOf(store, kept)).toBe("stay");
    // Another process (a restart) sees the deletion too.
    expect(await storeWith().open(gone)).toBeNull();
  });

  it("still streams an image that is deleted after it was opened", async () => {
    const store = storeWith();
    const imageId = await store.add(Buffer.from("still here"), "image/png", expiresIn(HOUR));
    const opened = await store.open(imageId);
    await store.delete(imageId);
    expect((await readAll(opened!.stream)).toString()).toBe("still here");
  });

  it("answers null, and deletes nothing, for ids that point at no image of theirs", async () => {
    const store = storeWith();
    const imageId = await store.add(Buffer.from("the real one"), "image/png", expiresIn(HOUR));
    const real = parseSegmentImageId(imageId)!;
    const pointingNowhere = [
      segmentImageId({ ...real, random: "ForgedRandomPart" }),
      segmentImageId({ ...real, offset: 7 }),
      segmentImageId({ ...real, offset: 1_000_000 }),
      segmentImageId({ ...real, segment: "000000000zzz" }),
      "img_AAAAAAAAAAAAAAAAAAAAAA",
    ];
    for (const id of pointingNowhere) {
      expect(await store.open(id), id).toBeNull();
      await store.delete(id);
    }
    expect(await contentOf(store, imageId)).toBe("the real one");
  });

  it("does not hand out an image whose bytes are not all in the file", async () => {
    const store = storeWith();
    const imageId = await store.add(Buffer.alloc(1000, 1), "image/png", expiresIn(HOUR));
    const location = parseSegmentImageId(imageId)!;
    const { truncate } = await import("node:fs/promises");
    await truncate(join(dir, "segments", `${location.segment}.seg`), RECORD_HEADER_BYTES + 500);
    expect(await store.open(imageId)).toBeNull();
  });

  it("refuses malformed ids, unknown content types and empty images, and writes nothing for them", async () => {
    const store = storeWith();
    for (const id of ["../img_escapeattempt", "img_../../etc/passwd", "img_short", `img_${"a".repeat(65)}`, ""]) {
      await expect(store.open(id), id).rejects.toThrow(InvalidImageIdError);
      await expect(store.delete(id), id).rejects.toThrow(InvalidImageIdError);
    }
    await expect(store.add(Buffer.from("x"), "text/html", expiresIn(HOUR))).rejects.toThrow(/content type/);
    await expect(store.add(Buffer.alloc(0), "image/png", expiresIn(HOUR))).rejects.toThrow(/1 to/);
    expect(await segmentFiles()).toEqual([]);
  });

  it("starts a new segment when the current one is full, or old", async () => {
    const store = storeWith({ maxBytes: 4096, maxAgeMs: 60_000 });
    const first = await store.add(Buffer.alloc(3000), "image/png", expiresIn(HOUR));
    const second = await store.add(Buffer.alloc(3000), "image/png", expiresIn(HOUR));
    expect(parseSegmentImageId(second)?.segment).not.toBe(parseSegmentImageId(first)?.segment);
    // One image larger than a whole segment still has a place: a segment of its own.
    const large = await store.add(Buffer.alloc(10_000, 9), "image/png", expiresIn(HOUR));
    expect(parseSegmentImageId(large)).toMatchObject({ offset: 0 });
    expect((await store.open(large))?.size).toBe(10_000);
    const small = await store.add(Buffer.alloc(10), "image/png", expiresIn(HOUR));
    clock += 60_000;
    const later = await store.add(Buffer.alloc(10), "image/png", expiresIn(HOUR));
    expect(parseSegmentImageId(later)?.segment).not.toBe(parseSegmentImageId(small)?.segment);
    expect(await segmentFiles()).toHaveLength(5);
  });

  it("reads and deletes images an earlier version stored as their own files", async () => {
    const store = storeWith();
    await writeFile(join(dir, "img_AAAAAAAAAAAAAAAAAAAAAA.png"), "an old file");
    expect(await contentOf(store, "img_AAAAAAAAAAAAAAAAAAAAAA")).toBe("an old file");
    await store.delete("img_AAAAAAAAAAAAAAAAAAAAAA");
    expect(await store.open("img_AAAAAAAAAAAAAAAAAAAAAA")).toBeNull();
    expect(await readdir(dir)).toEqual(["segments"]);
  });

  describe("reclaim", () => {
    it("removes a closed segment once its last image has expired, and not before", async () => {
      const store = storeWith({ maxAgeMs: 10 * 60_000 });
      const short = await store.add(Buffer.from("short"), "image/png", expiresIn(HOUR));
      const long = await store.add(Buffer.from("long"), "image/png", expiresIn(3 * HOUR));
      clock += 2 * HOUR;
      const current = await store.add(Buffer.from("current"), "image/png", expiresIn(-HOUR));
      expect(await store.reclaim()).toBe(0);
      expect(await contentOf(store, long)).toBe("long");

      clock += 2 * HOUR;
      // The old segment is spent; the current one is this store's own, still open, and kept.
      expect(await store.reclaim()).toBe(1);
      expect(await store.open(short)).toBeNull();
      expect(await contentOf(store, current)).toBe("current");
      expect(await segmentFiles()).toEqual([`${parseSegmentImageId(current)!.segment}.seg`]);
    });

    it("waits past a segment's age limit before removing another process's segment, which may still be written", async () => {
      const other = storeWith({ maxAgeMs: 10 * 60_000 });
      const image = await other.add(Buffer.from("expired at once"), "image/png", expiresIn(-1));
      const store = storeWith({ maxAgeMs: 10 * 60_000 });
      clock += 10 * 60_000;
      expect(await store.reclaim()).toBe(0);
      clock += 60_000;
      expect(await store.reclaim()).toBe(1);
      expect(await store.open(image)).toBeNull();
    });

    it("reads a crashed segment's headers up to a torn record at its end", async () => {
      const before = storeWith();
      const image = await before.add(Buffer.from("written whole"), "image/png", expiresIn(HOUR));
      const segment = parseSegmentImageId(image)!.segment;
      // A process killed mid-write leaves part of a header behind.
      await appendFile(join(dir, "segments", `${segment}.seg`), Buffer.from("OVI1\0\x01"));
      const store = storeWith();
      expect(await contentOf(store, image)).toBe("written whole");
      clock += HOUR + 11 * 60_000;
      expect(await store.reclaim()).toBe(1);
    });

    it("reads every header of a segment larger than its read window, big images between small ones", async () => {
      const store = storeWith();
      for (let index = 0; index < 300; index += 1) {
        const bytes = Buffer.alloc(index === 150 ? 300 * 1024 : 2000, index);
        await store.add(bytes, "image/png", expiresIn(HOUR + index * 1000));
      }
      const reader = storeWith();
      // The last image, past 1 MB into the file, expires latest: the segment stays until then.
      clock += HOUR + 299 * 1000 - 1;
      expect(await reader.reclaim()).toBe(0);
      clock += 2;
      expect(await reader.reclaim()).toBe(1);
    });

    it("ignores files in the segment directory that are not segments", async () => {
      const store = storeWith();
      await writeFile(join(dir, "segments", "notes.txt"), "keep me");
      clock += 100 * HOUR;
      expect(await store.reclaim()).toBe(0);
      expect(await segmentFiles()).toEqual(["notes.txt"]);
    });
  });
});
