import { Readable } from "node:stream";
import { DeleteObjectCommand, GetObjectCommand, PutObjectCommand, S3Client, S3ServiceException } from "@aws-sdk/client-s3";
import { newId } from "@orvado/core";
import { assertImageId, type AddOptions, type ImageStore, type StoredImage } from "./store.ts";
import type { StorageConfig } from "./config.ts";

type S3Config = Extract<StorageConfig, { kind: "s3" }>;

const CONTENT_TYPES = new Set(["image/png", "image/jpeg", "image/webp"]);

/**
 * Images as objects in an S3-compatible bucket, one object per image, its
 * content type kept as the object's Content-Type. Links still point at the
 * edge, which streams the object through generation (docs/api.md): the bucket
 * never has to be reachable by clients.
 */
export class S3ImageStore implements ImageStore {
  readonly #client: S3Client;

  constructor(private readonly config: S3Config) {
    this.#client = new S3Client({
      region: config.region,
      endpoint: config.endpoint,
      forcePathStyle: config.forcePathStyle,
      credentials: config.credentials,
    });
  }

  /** Each image is its own object, deleted by the file sweeper, so the expiry is not needed here. */
  async add(bytes: Buffer, contentType: string, _options: AddOptions): Promise<string> {
    if (!CONTENT_TYPES.has(contentType)) throw new Error(`Unsupported image content type ${JSON.stringify(contentType)}`);
    const imageId = newId("img", 16);
    // A PUT stores the whole object at once: nobody can read half an image.
    await this.#client.send(new PutObjectCommand({ Bucket: this.config.bucket, Key: this.#key(imageId), Body: bytes, ContentType: contentType }));
    return imageId;
  }

  async open(imageId: string): Promise<StoredImage | null> {
    assertImageId(imageId);
    try {
      const object = await this.#client.send(new GetObjectCommand({ Bucket: this.config.bucket, Key: this.#key(imageId) }));
      if (!(object.Body instanceof Readable)) throw new Error("The S3 client returned a body that is not a Node stream");
      return { contentType: object.ContentType ?? "application/octet-stream", size: object.ContentLength ?? 0, stream: object.Body };
    } catch (error) {
      if (isMissing(error)) return null;
      throw error;
    }
  }

  async delete(imageId: string): Promise<void> {
    assertImageId(imageId);
    // S3 answers 204 for a key that does not exist, so deleting twice is harmless.
    await this.#client.send(new DeleteObjectCommand({ Bucket: this.config.bucket, Key: this.#key(imageId) }));
  }

  close(): void {
    this.#client.destroy();
  }

  #key(imageId: string): string {
    return `${this.config.prefix}${imageId}`;
  }
}

function isMissing(error: unknown): boolean {
  return error instanceof S3ServiceException && (error.name === "NoSuchKey" || error.$metadata.httpStatusCode === 404);
}
