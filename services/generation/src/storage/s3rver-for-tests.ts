import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
// @ts-expect-error s3rver ships no type declarations
import S3rver from "s3rver";
import type { StorageConfig } from "./config.ts";

/** A real S3 protocol server (s3rver) on 127.0.0.1 with one empty bucket, for tests only. */
export async function startLocalS3(bucket = "orvado-images"): Promise<{ config: Extract<StorageConfig, { kind: "s3" }>; close(): Promise<void> }> {
  const directory = await mkdtemp(join(tmpdir(), "orvado-s3rver-"));
  const server = new S3rver({ address: "127.0.0.1", port: 0, silent: true, directory, configureBuckets: [{ name: bucket }] });
  const { port } = (await server.run()) as { port: number };
  return {
    config: {
      kind: "s3",
      bucket,
      prefix: "images/",
      region: "us-east-1",
      endpoint: `http://127.0.0.1:${port}`,
      forcePathStyle: true,
      // s3rver's fixed development credentials.
      credentials: { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" },
    },
    async close() {
      await server.close();
      await rm(directory, { recursive: true, force: true });
    },
  };
}
