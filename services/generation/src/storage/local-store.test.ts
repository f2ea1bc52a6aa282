import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { LocalImageStore } from "./local-store.ts";
import { InvalidImageIdError } from "./store.ts";

async function readAll(stream: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.from(chunk));
  return Buffer.concat(chunks);
}

describe("LocalImageStore", () => {
  let root: string;
  let dir: string;
  let store: LocalImageStore;

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), "orvado-images-"));
    // A directory that does not exist yet: the store creates it.
    dir = join(root, "nested", "images");
    store = new LocalImageStore(dir);
  });

  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it("returns what was put, with its type and size", async () => {
    const bytes = Buffer.from("not really a png, but bytes are bytes");
    await store.put("img_roundtrip01", bytes, "image/png");

    const opened = await store.open("img_roundtrip01");
    expect(opened).not.toBeNull();
    expect(opened?.contentType).toBe("image/png");
    expect(opened?.size).toBe(bytes.length);
    expect((await readAll(opened!.stream)).equals(bytes)).toBe(true);
  });

  it("keeps each content type", async () => {
    await store.put("img_jpegimage01", Buffer.from([0xff, 0xd8, 0xff]), "image/jpeg");
    await store.put("img_webpimage01", Buffer.from("RIFF"), "image/webp");
    for (const [id, contentType] of [["img_jpegimage01", "image/jpeg"], ["img_webpimage01", "image/webp"]] as const) {
      const opened = await store.open(id);
      expect(opened?.contentType).toBe(contentType);
      // An opened image holds its file open until the stream is read or destroyed.
      await readAll(opened!.stream);
    }
  });

  it("leaves only the final file behind, with no temp files", async () => {
    await store.put("img_atomicwrite1", Buffer.alloc(256 * 1024, 7), "image/png");
    expect(await readdir(dir)).toEqual(["img_atomicwrite1.png"]);
  });

  it("replaces an image re-stored under another type", async () => {
    await store.put("img_retypedimg1", Buffer.from("png"), "image/png");
    await store.put("img_retypedimg1", Buffer.from("jpeg"), "image/jpeg");
    const opened = await store.open("img_retypedimg1");
    expect(opened?.contentType).toBe("image/jpeg");
    expect((await readAll(opened!.stream)).toString()).toBe("jpeg");
    expect(await readdir(dir)).toEqual(["img_retypedimg1.jpeg"]);
  });

  it("stores a fresh id (a job's new image) the same way, with nothing left behind", async () => {
    await store.put("img_freshimage01", Buffer.from("fresh png"), "image/png", { fresh: true });
    const opened = await store.open("img_freshimage01");
    expect(opened?.contentType).toBe("image/png");
    expect((await readAll(opened!.stream)).toString()).toBe("fresh png");
    expect(await readdir(dir)).toEqual(["img_freshimage01.png"]);
  });

  it("never overwrites or removes an existing file when told an id is fresh", async () => {
    await store.put("img_freshimage02", Buffer.from("first"), "image/png");
    await expect(store.put("img_freshimage02", Buffer.from("second"), "image/png", { fresh: true })).rejects.toMatchObject({ code: "EEXIST" });
    const opened = await store.open("img_freshimage02");
    expect((await readAll(opened!.stream)).toString()).toBe("first");
  });

  it("refuses an unknown content type and writes nothing", async () => {
    await expect(store.put("img_unknowntype1", Buffer.from("x"), "text/html")).rejects.toThrow(/content type/);
    expect(await readdir(dir)).toEqual([]);
  });

  it("answers null for an id that was never stored", async () => {
    expect(await store.open("img_neverstored1")).toBeNull();
  });

  it("deletes, and deleting again is harmless", async () => {
    await store.put("img_deletedimg01", Buffer.from("bye"), "image/png");
    await store.delete("img_deletedimg01");
    expect(await store.open("img_deletedimg01")).toBeNull();
    await store.delete("img_deletedimg01");
    expect(await readdir(dir)).toEqual([]);
  });

  it("still streams an image that is deleted after it was opened", async () => {
    await store.put("img_openthendel1", Buffer.from("still here"), "image/png");
    const opened = await store.open("img_openthendel1");
    await store.delete("img_openthendel1");
    expect((await readAll(opened!.stream)).toString()).toBe("still here");
  });

  it("refuses ids that could escape the directory or are malformed", async () => {
    const badIds = [
      "../img_escapeattempt",
      "img_../../etc/passwd",
      "img_abc/def/ghijk",
      "img_short",
      "IMG_uppercaseprefix",
      "img_has space inside",
      "img_endsinnewline1\n",
      `img_${"a".repeat(65)}`,
      "",
    ];
    for (const id of badIds) {
      await expect(store.put(id, Buffer.from("x"), "image/png"), id).rejects.toThrow(InvalidImageIdError);
      await expect(store.open(id), id).rejects.toThrow(InvalidImageIdError);
      await expect(store.delete(id), id).rejects.toThrow(InvalidImageIdError);
    }
    expect(await readdir(dir)).toEqual([]);
  });
});
