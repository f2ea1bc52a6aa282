import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ListObjectsV2Command, S3Client } from "@aws-sdk/client-s3";
import { S3ImageStore } from "./s3-store.ts";
import { InvalidImageIdError } from "./store.ts";
import { startLocalS3 } from "./s3rver-for-tests.ts";

// The S3 store over real HTTP against s3rver, a local server speaking the S3 protocol.

let s3: Awaited<ReturnType<typeof startLocalS3>>;
let store: S3ImageStore;

async function readAll(stream: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.from(chunk));
  return Buffer.concat(chunks);
}

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

describe("S3ImageStore", () => {
  it("returns what was put, with its type and size, under the configured prefix", async () => {
    const bytes = Buffer.alloc(700 * 1024, 3);
    await store.put("img_s3roundtrip01", bytes, "image/png");
    const opened = await store.open("img_s3roundtrip01");
    expect([opened?.contentType, opened?.size]).toEqual(["image/png", bytes.length]);
    expect((await readAll(opened!.stream)).equals(bytes)).toBe(true);
    expect(await objectKeys()).toContain("images/img_s3roundtrip01");
  });

  it("replaces an image re-stored under another type", async () => {
    await store.put("img_s3retyped0001", Buffer.from("png"), "image/png");
    await store.put("img_s3retyped0001", Buffer.from("jpeg"), "image/jpeg");
    const opened = await store.open("img_s3retyped0001");
    expect(opened?.contentType).toBe("image/jpeg");
    expect((await readAll(opened!.stream)).toString()).toBe("jpeg");
  });

  it("answers null for an id that was never stored", async () => {
    expect(await store.open("img_s3neverstored")).toBeNull();
  });

  it("deletes, and deleting again is harmless", async () => {
    await store.put("img_s3deleted0001", Buffer.from("bye"), "image/png");
    await store.delete("img_s3deleted0001");
    expect(await store.open("img_s3deleted0001")).toBeNull();
    await store.delete("img_s3deleted0001");
    expect(await objectKeys()).not.toContain("images/img_s3deleted0001");
  });

  it("refuses an unknown content type and malformed ids", async () => {
    await expect(store.put("img_s3badtype0001", Buffer.from("x"), "text/html")).rejects.toThrow(/content type/);
    for (const id of ["../img_escapeattempt", "img_a/b/c/d/e/f/g", ""]) {
      await expect(store.put(id, Buffer.from("x"), "image/png")).rejects.toThrow(InvalidImageIdError);
      await expect(store.open(id)).rejects.toThrow(InvalidImageIdError);
    }
  });

  it("reports a bucket that does not exist as an error, not as a missing image", async () => {
    const elsewhere = new S3ImageStore({ ...s3.config, bucket: "no-such-bucket" });
    await expect(elsewhere.put("img_s3nobucket001", Buffer.from("x"), "image/png")).rejects.toThrow();
    elsewhere.close();
  });
});
