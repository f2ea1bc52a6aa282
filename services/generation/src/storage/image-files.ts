import { open, rm, type FileHandle } from "node:fs/promises";
import { join } from "node:path";
import { assertImageId, READ_CHUNK_BYTES, type StoredImage } from "./store.ts";

// Images stored by earlier versions, one file per image named `<imageId>.<png|jpeg|webp>`
// in the image directory. Nothing new is written this way (segment-store.ts); these
// are read until their links expire and deleted by the file sweeper.

const EXTENSION_BY_TYPE: ReadonlyMap<string, string> = new Map([
  ["image/png", "png"],
  ["image/jpeg", "jpeg"],
  ["image/webp", "webp"],
]);

export class ImageFiles {
  constructor(private readonly dir: string) {}

  /** The caller must read the stream to the end or destroy it; either closes the file. */
  async open(imageId: string): Promise<StoredImage | null> {
    assertImageId(imageId);
    for (const [contentType, extension] of EXTENSION_BY_TYPE) {
      const handle = await openIfExists(this.#pathFor(imageId, extension));
      if (handle === null) continue;
      try {
        // Size and stream come from the same open file, so a concurrent delete cannot split them.
        const { size } = await handle.stat();
        return { contentType, size, stream: handle.createReadStream({ highWaterMark: READ_CHUNK_BYTES }) };
      } catch (error) {
        await handle.close();
        throw error;
      }
    }
    return null;
  }

  async delete(imageId: string): Promise<void> {
    assertImageId(imageId);
    for (const extension of EXTENSION_BY_TYPE.values()) await rm(this.#pathFor(imageId, extension), { force: true });
  }

  #pathFor(imageId: string, extension: string): string {
    return join(this.dir, `${imageId}.${extension}`);
  }
}

/** The open file, or null when there is none at the path. */
export async function openIfExists(path: string, flags: "r" | "r+" = "r"): Promise<FileHandle | null> {
  try {
    return await open(path, flags);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw error;
  }
}
