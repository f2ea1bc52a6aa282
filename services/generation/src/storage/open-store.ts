import type { StorageConfig } from "./config.ts";
import { SegmentImageStore } from "./segment-store.ts";
import type { ImageStore } from "./store.ts";

/**
 * The store the configuration names: local disk by default, or an S3-compatible bucket.
 * The S3 store is loaded only when configured: the AWS SDK's S3 client adds about
 * 4 MB of heap and 20 MB of RSS to a process that keeps its images on local disk.
 */
export async function openImageStore(config: StorageConfig): Promise<ImageStore> {
  if (config.kind !== "s3") return new SegmentImageStore(config.dir);
  const { S3ImageStore } = await import("./s3-store.ts");
  return new S3ImageStore(config);
}
