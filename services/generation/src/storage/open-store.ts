import type { StorageConfig } from "./config.ts";
import { SegmentImageStore } from "./segment-store.ts";
import { S3ImageStore } from "./s3-store.ts";
import type { ImageStore } from "./store.ts";

/** The store the configuration names: local disk by default, or an S3-compatible bucket. */
export function openImageStore(config: StorageConfig): ImageStore {
  return config.kind === "s3" ? new S3ImageStore(config) : new SegmentImageStore(config.dir);
}
