import type { StorageConfig } from "./config.ts";
import { LocalImageStore } from "./local-store.ts";
import { S3ImageStore } from "./s3-store.ts";
import type { ImageStore } from "./store.ts";

/** The store the configuration names: local disk by default, or an S3-compatible bucket. */
export function openImageStore(config: StorageConfig): ImageStore & { close?(): void } {
  return config.kind === "s3" ? new S3ImageStore(config) : new LocalImageStore(config.dir);
}
