import { z } from "zod";
import { flagSchema } from "@orvado/core";

// Where images are kept: local disk (the embedded default) or any S3-compatible
// bucket. Parsed as part of generation's config module (config.ts).

export type StorageConfig =
  | { kind: "local"; dir: string }
  | {
      kind: "s3";
      bucket: string;
      /** Object keys are `<prefix><image id>`. */
      prefix: string;
      region: string;
      /** Unset means AWS itself; set it for MinIO, R2, Ceph, s3rver, … */
      endpoint: string | undefined;
      forcePathStyle: boolean;
      /** Unset means the AWS SDK's default credential chain (env, profile, instance role). */
      credentials: { accessKeyId: string; secretAccessKey: string } | undefined;
    };

export const storageEnvShape = {
  GENERATION_STORAGE: z.enum(["local", "s3"]).default("local"),
  GENERATION_IMAGE_DIR: z.string().default("./data/images"),
  GENERATION_S3_BUCKET: z.string().min(3).max(63).optional(),
  GENERATION_S3_PREFIX: z.string().max(200).default("images/"),
  GENERATION_S3_REGION: z.string().min(1).default("us-east-1"),
  GENERATION_S3_ENDPOINT: z.string().url().optional(),
  GENERATION_S3_FORCE_PATH_STYLE: flagSchema,
  GENERATION_S3_ACCESS_KEY_ID: z.string().min(1).optional(),
  GENERATION_S3_SECRET_ACCESS_KEY: z.string().min(1).optional(),
};

const storageEnv = z.object(storageEnvShape);

/** Checks that hold across variables; add to the service schema with `.superRefine(checkStorageEnv)`. */
export function checkStorageEnv(env: z.infer<typeof storageEnv>, ctx: z.RefinementCtx): void {
  if (env.GENERATION_STORAGE === "s3" && !env.GENERATION_S3_BUCKET) {
    ctx.addIssue({ code: "custom", path: ["GENERATION_S3_BUCKET"], message: "is required when GENERATION_STORAGE=s3" });
  }
  if (!env.GENERATION_S3_ACCESS_KEY_ID !== !env.GENERATION_S3_SECRET_ACCESS_KEY) {
    ctx.addIssue({ code: "custom", path: ["GENERATION_S3_SECRET_ACCESS_KEY"], message: "set both GENERATION_S3_ACCESS_KEY_ID and GENERATION_S3_SECRET_ACCESS_KEY, or neither" });
  }
}

export function storageConfigFrom(env: z.infer<typeof storageEnv>): StorageConfig {
  if (env.GENERATION_STORAGE === "local") return { kind: "local", dir: env.GENERATION_IMAGE_DIR };
  return {
    kind: "s3",
    bucket: env.GENERATION_S3_BUCKET!,
    prefix: env.GENERATION_S3_PREFIX,
    region: env.GENERATION_S3_REGION,
    endpoint: env.GENERATION_S3_ENDPOINT,
    forcePathStyle: env.GENERATION_S3_FORCE_PATH_STYLE,
    credentials:
      env.GENERATION_S3_ACCESS_KEY_ID && env.GENERATION_S3_SECRET_ACCESS_KEY
        ? { accessKeyId: env.GENERATION_S3_ACCESS_KEY_ID, secretAccessKey: env.GENERATION_S3_SECRET_ACCESS_KEY }
        : undefined,
  };
}
