import { z } from "zod";
import { commaListSchema, parseEnv, portSchema } from "@orvado/core";

export interface GenerationConfig {
  host: string;
  port: number;
  internalSecret: string;
  databaseUrl: string;
  modelsFile: string;
  billingUrl: string;
  urlSigningSecret: string;
  imageDir: string;
  urlTtlSeconds: number;
  /** Spec 4.1 rule 5: a job is given up after 10 minutes. */
  jobTimeoutMs: number;
  maxImagesPerRequest: number;
  kafkaBrokers: string[];
}

const schema = z.object({
  GENERATION_HOST: z.string().default("127.0.0.1"),
  GENERATION_PORT: portSchema.default(7103),
  ORVADO_INTERNAL_SECRET: z.string().min(16, "must be at least 16 characters"),
  DATABASE_URL: z.string().default("./data/pglite"),
  ORVADO_MODELS_FILE: z.string().default("./config/models.json"),
  ORVADO_BILLING_URL: z.string().url().default("http://127.0.0.1:7102"),
  ORVADO_URL_SIGNING_SECRET: z.string().min(16, "must be at least 16 characters"),
  GENERATION_IMAGE_DIR: z.string().default("./data/images"),
  GENERATION_URL_TTL_SECONDS: z.coerce.number().int().min(60).max(7 * 86_400).default(86_400),
  GENERATION_JOB_TIMEOUT_MS: z.coerce.number().int().min(1000).max(600_000).default(600_000),
  GENERATION_MAX_IMAGES: z.coerce.number().int().min(1).max(10).default(4),
  KAFKA_BROKERS: commaListSchema,
});

export function loadGenerationConfig(env: NodeJS.ProcessEnv = process.env): GenerationConfig {
  const parsed = parseEnv(schema, env);
  return {
    host: parsed.GENERATION_HOST,
    port: parsed.GENERATION_PORT,
    internalSecret: parsed.ORVADO_INTERNAL_SECRET,
    databaseUrl: parsed.DATABASE_URL,
    modelsFile: parsed.ORVADO_MODELS_FILE,
    billingUrl: parsed.ORVADO_BILLING_URL,
    urlSigningSecret: parsed.ORVADO_URL_SIGNING_SECRET,
    imageDir: parsed.GENERATION_IMAGE_DIR,
    urlTtlSeconds: parsed.GENERATION_URL_TTL_SECONDS,
    jobTimeoutMs: parsed.GENERATION_JOB_TIMEOUT_MS,
    maxImagesPerRequest: parsed.GENERATION_MAX_IMAGES,
    kafkaBrokers: parsed.KAFKA_BROKERS,
  };
}
