import type { StorageConfig } from "./config.ts";
import { SegmentImageStore } from "./segment-store.ts";
import type { ImageStore } from "./store.ts";

/**
 * The store the configuration names: local disk by default, or an S3-compatible bucket.
 * The S3 store is loaded only when configured: the AWS SDK's S3 client adds heap and
 * RSS to a process that keeps its images on local disk
 * (docs/design-choices.md#bundles-run-with-plain-node).
 */
export async function openImageStore(config: StorageConfig): Promise<ImageStore> {
  if (config.kind !== "s3") return new SegmentImageStore(config.dir);
  const { S3ImageStore } = await import("./s3-store.ts");
  return new S3ImageStore(config);
}
