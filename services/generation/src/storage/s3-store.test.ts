import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ListObjectsV2Command, S3Client } from "@aws-sdk/client-s3";
import { S3ImageStore } from "./s3-store.ts";
import { InvalidImageIdError, isImageId } from "./store.ts";
import { startLocalS3 } from "./s3rver-for-tests.ts";
import { readAll } from "./test-support.ts";

// The S3 store over real HTTP against s3rver, a local server speaking the S3 protocol.

let s3: Awaited<ReturnType<typeof startLocalS3>>;
let store: S3ImageStore;

async function objectKeys(): Promise<string[]> {
  const client = new S3Client({ ...s3.config });
  const listed = await client.send(new ListObjectsV2Command({ Bucket: s3.config.bucket }));
  client.destroy();
  return (listed.Contents ?? []).map((object) => object.Key!).sort();
}

beforeAll(async () => {
  s3 = await startLocalS3();
  store = new S3ImageStore(s3.config);
});
afterAll(async () => {
  store?.close();
  await s3?.close();
});

const inAnHour = () => ({ expiresAt: new Date(Date.now() + 3_600_000) });

describe("S3ImageStore", () => {
  it("returns what was added, with its type and size, under the configured prefix", async () => {
    const bytes = Buffer.alloc(700 * 1024, 3);
    const imageId = await store.add(bytes, "image/png", inAnHour());
    expect(isImageId(imageId)).toBe(true);
    const opened = await store.open(imageId);
    expect([opened?.contentType, opened?.size]).toEqual(["image/png", bytes.length]);
    expect((await readAll(opened!.stream)).equals(bytes)).toBe(true);
    expect(await objectKeys()).toContain(`images/${imageId}`);
  });

  it("keeps each image's content type, under an id of its own", async () => {
    const png = await store.add(Buffer.from("png"), "image/png", inAnHour());
    const jpeg = await store.add(Buffer.from("jpeg"), "image/jpeg", inAnHour());
    expect(png).not.toBe(jpeg);
    const opened = await store.open(jpeg);
    expect(opened?.contentType).toBe("image/jpeg");
    expect((await readAll(opened!.stream)).toString()).toBe("jpeg");
  });

  it("answers null for an id that was never stored", async () => {
    expect(await store.open("img_s3neverstored")).toBeNull();
  });

  it("deletes, and deleting again is harmless", async () => {
    const imageId = await store.add(Buffer.from("bye"), "image/png", inAnHour());
    await store.delete(imageId);
    expect(await store.open(imageId)).toBeNull();
    await store.delete(imageId);
    expect(await objectKeys()).not.toContain(`images/${imageId}`);
  });

  it("refuses an unknown content type and malformed ids", async () => {
    const before = await objectKeys();
    await expect(store.add(Buffer.from("x"), "text/html", inAnHour())).rejects.toThrow(/content type/);
    expect(await objectKeys()).toEqual(before);
    for (const id of ["../img_escapeattempt", "img_a/b/c/d/e/f/g", ""]) {
      await expect(store.open(id)).rejects.toThrow(InvalidImageIdError);
      await expect(store.delete(id)).rejects.toThrow(InvalidImageIdError);
    }
  });

  it("reports a bucket that does not exist as an error, not as a missing image", async () => {
    const elsewhere = new S3ImageStore({ ...s3.config, bucket: "no-such-bucket" });
    await expect(elsewhere.add(Buffer.from("x"), "image/png", inAnHour())).rejects.toThrow();
    elsewhere.close();
  });
});
