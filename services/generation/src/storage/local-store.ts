import { randomBytes } from "node:crypto";
import { mkdirSync, writeFile } from "node:fs";
import { open, rename, rm, type FileHandle } from "node:fs/promises";
import { join, resolve } from "node:path";
import { assertImageId, type ImageStore, type PutOptions, type StoredImage } from "./store.ts";

// The file extension records the content type, so an image is one file and one
// rename publishes both its bytes and its type together.
const EXTENSION_BY_TYPE: ReadonlyMap<string, string> = new Map([
  ["image/png", "png"],
  ["image/jpeg", "jpeg"],
  ["image/webp", "webp"],
]);

/** Images as files in one directory, named `<imageId>.<png|jpeg|webp>`. */
export class LocalImageStore implements ImageStore {
  private readonly dir: string;

  constructor(dir: string) {
    this.dir = resolve(dir);
    // Synchronous on purpose: it runs once at start-up and a bad directory should stop the service there.
    mkdirSync(this.dir, { recursive: true });
  }

  async put(imageId: string, bytes: Buffer, contentType: string, options: PutOptions = {}): Promise<void> {
    assertImageId(imageId);
    const extension = EXTENSION_BY_TYPE.get(contentType);
    if (extension === undefined) throw new Error(`Unsupported image content type ${JSON.stringify(contentType)}`);

    // One writeFile (open, write, fsync, close on the thread pool) where a FileHandle took four
    // promise round trips: the file write was about a tenth of the event loop at 100 connections.
    const finalPath = this.pathFor(imageId, extension);
    if (options.fresh) {
      // A fresh id is in no row yet (the job records its images only after this put), so
      // nobody can read it half-written: write it in place, and save the rename's hop.
      try {
        await writeNewFileFlushed(finalPath, bytes);
      } catch (error) {
        // "wx": an existing file is never ours to remove.
        if ((error as NodeJS.ErrnoException).code !== "EEXIST") await rm(finalPath, { force: true });
        throw error;
      }
      return;
    }
    // Written under a dot-name the id pattern can never match, flushed to disk, then renamed
    // into place: a crash leaves at most a stray temp file, never a half image under the real name.
    const tempPath = join(this.dir, `.tmp-${imageId}-${randomBytes(6).toString("hex")}`);
    try {
      await writeNewFileFlushed(tempPath, bytes);
      await rename(tempPath, finalPath);
    } catch (error) {
      await rm(tempPath, { force: true });
      throw error;
    }
    // An id re-stored with a different type must not leave the old file to shadow it.
    await this.removeFiles(imageId, (other) => other !== extension);
  }

  /** The caller must read the stream to the end or destroy it; either closes the file. */
  async open(imageId: string): Promise<StoredImage | null> {
    assertImageId(imageId);
    for (const [contentType, extension] of EXTENSION_BY_TYPE) {
      const handle = await openIfExists(this.pathFor(imageId, extension));
      if (handle === null) continue;
      try {
        // Size and stream come from the same open file, so a concurrent delete cannot split them.
        const { size } = await handle.stat();
        return { contentType, size, stream: handle.createReadStream() };
      } catch (error) {
        await handle.close();
        throw error;
      }
    }
    return null;
  }

  async delete(imageId: string): Promise<void> {
    assertImageId(imageId);
    await this.removeFiles(imageId, () => true);
  }

  private pathFor(imageId: string, extension: string): string {
    return join(this.dir, `${imageId}.${extension}`);
  }

  private async removeFiles(imageId: string, shouldRemove: (extension: string) => boolean): Promise<void> {
    for (const extension of EXTENSION_BY_TYPE.values()) {
      if (shouldRemove(extension)) await rm(this.pathFor(imageId, extension), { force: true });
    }
  }
}

function writeNewFileFlushed(path: string, bytes: Buffer): Promise<void> {
  return new Promise((resolve, reject) => writeFile(path, bytes, { flag: "wx", flush: true }, (error) => (error ? reject(error) : resolve())));
}

async function openIfExists(path: string): Promise<FileHandle | null> {
  try {
    return await open(path, "r");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw error;
  }
}
