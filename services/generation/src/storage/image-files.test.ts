import { mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ImageFiles } from "./image-files.ts";
import { InvalidImageIdError } from "./store.ts";
import { readAll } from "./test-support.ts";

// Images an earlier version stored as their own files: still read and deleted.

describe("ImageFiles", () => {
  let dir: string;
  let files: ImageFiles;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), "orvado-image-files-"));
    files = new ImageFiles(dir);
  });

  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("reads an image file with the type its extension names, and its size", async () => {
    await writeFile(join(dir, "img_oldpngimage01.png"), "old png bytes");
    await writeFile(join(dir, "img_oldjpegimage1.jpeg"), "old jpeg");
    const png = await files.open("img_oldpngimage01");
    expect([png?.contentType, png?.size]).toEqual(["image/png", 13]);
    expect((await readAll(png!.stream)).toString()).toBe("old png bytes");
    const jpeg = await files.open("img_oldjpegimage1");
    expect(jpeg?.contentType).toBe("image/jpeg");
    await readAll(jpeg!.stream);
  });

  it("answers null for an id with no file", async () => {
    expect(await files.open("img_neverstored1")).toBeNull();
  });

  it("deletes, and deleting again is harmless", async () => {
    await writeFile(join(dir, "img_deletedimg01.png"), "bye");
    await files.delete("img_deletedimg01");
    expect(await files.open("img_deletedimg01")).toBeNull();
    await files.delete("img_deletedimg01");
    expect(await readdir(dir)).toEqual([]);
  });

  it("still streams an image that is deleted after it was opened", async () => {
    await writeFile(join(dir, "img_openthendel1.png"), "still here");
    const opened = await files.open("img_openthendel1");
    await files.delete("img_openthendel1");
    expect((await readAll(opened!.stream)).toString()).toBe("still here");
  });

  it("refuses ids that could escape the directory or are malformed", async () => {
    const badIds = ["../img_escapeattempt", "img_../../etc/passwd", "img_abc/def/ghijk", "img_short", "IMG_uppercaseprefix", "img_has space inside", "img_endsinnewline1\n", `img_${"a".repeat(65)}`, ""];
    for (const id of badIds) {
      await expect(files.open(id), id).rejects.toThrow(InvalidImageIdError);
      await expect(files.delete(id), id).rejects.toThrow(InvalidImageIdError);
    }
  });
});
