import { z } from "zod";
import { IMAGE_COUNT_CEILING, TIMING_DEFAULTS, checkSettingsAgree, flagSchema, parseEnv, portSchema, serviceUrlsSchema, timingsFrom } from "@orvado/core";
import { kafkaEnvShape, kafkaSettingsFromEnv, type KafkaSettings } from "@orvado/events";
import { checkStorageEnv, storageConfigFrom, storageEnvShape, type StorageConfig } from "./storage/config.ts";

export interface GenerationConfig {
  host: string;
  port: number;
  internalSecret: string;
  databaseUrl: string;
  modelsFile: string;
  /** Billing's replicas (one URL or several). */
  billingUrls: string[];
  urlSigningSecret: string;
  imageDir: string;
  /** Local disk or an S3-compatible bucket (storage/config.ts). */
  storage: StorageConfig;
  /** How often files whose links expired are deleted (file-sweeper.ts). */
  sweepIntervalMs: number;
  urlTtlSeconds: number;
  /** A job is given up after 10 minutes at most (docs/api.md#how-long-a-call-takes). */
  jobTimeoutMs: number;
  maxImagesPerRequest: number;
  kafka: KafkaSettings;
  /**
   * Reads the environment variable a channel's `apiKeyEnv` names (docs/providers.md). A
   * function rather than a copy of the environment, so logging the config never shows a key.
   */
  readChannelKey(variable: string): string | undefined;
  /** Lets upstream-provided URLs reach loopback/private addresses (local simulators, tests). */
  allowPrivateUpstreams: boolean;
  /** Consecutive upstream failures that open a channel's circuit breaker. */
  breakerFailures: number;
  /** How long an open breaker keeps its channel out of rotation before a trial call. */
  breakerCooldownMs: number;
  /** A channel slot's lease: a replica killed with -9 frees its slots at most this long after (capacity.ts). */
  channelLeaseTtlMs: number;
  /** How often a replica renews the leases of the channel slots it holds, in one statement. */
  channelLeaseRenewMs: number;
  /** Largest upstream answer (JSON or image download) read, in bytes. */
  maxUpstreamBytes: number;
  /** How often jobs lost with a stopped process are failed (orphan-jobs.ts). */
  orphanSweepIntervalMs: number;
  /** Added to the job time limit before a 'running' job counts as lost. */
  orphanGraceMs: number;
  /** Jobs one account may run at once unless auth gives it a limit of its own; 0 = no limit (account-admission.ts). */
  accountMaxConcurrentJobs: number;
}

const schema = z.object({
  GENERATION_HOST: z.string().default("127.0.0.1"),
  GENERATION_PORT: portSchema.default(7103),
  ORVADO_INTERNAL_SECRET: z.string().min(16, "must be at least 16 characters"),
  DATABASE_URL: z.string().default("./data/pglite"),
  ORVADO_MODELS_FILE: z.string().default("./config/models.json"),
  ORVADO_BILLING_URL: serviceUrlsSchema("http://127.0.0.1:7102"),
  ORVADO_URL_SIGNING_SECRET: z.string().min(16, "must be at least 16 characters"),
  ...storageEnvShape,
  GENERATION_URL_TTL_SECONDS: z.coerce.number().int().min(60).max(7 * 86_400).default(86_400),
  GENERATION_JOB_TIMEOUT_MS: z.coerce.number().int().min(1000).max(600_000).default(TIMING_DEFAULTS.GENERATION_JOB_TIMEOUT_MS),
  GENERATION_MAX_IMAGES: z.coerce.number().int().min(1).max(IMAGE_COUNT_CEILING).default(4),
  ...kafkaEnvShape,
  GENERATION_ALLOW_PRIVATE_UPSTREAMS: flagSchema,
  GENERATION_BREAKER_FAILURES: z.coerce.number().int().min(1).max(1000).default(5),
  GENERATION_BREAKER_COOLDOWN_MS: z.coerce.number().int().min(100).max(3_600_000).default(30_000),
  GENERATION_CHANNEL_LEASE_TTL_MS: z.coerce.number().int().min(1000).max(600_000).default(30_000),
  GENERATION_CHANNEL_LEASE_RENEW_MS: z.coerce.number().int().min(100).max(300_000).default(10_000),
  GENERATION_ORPHAN_SWEEP_INTERVAL_MS: z.coerce.number().int().min(100).max(3_600_000).default(TIMING_DEFAULTS.GENERATION_ORPHAN_SWEEP_INTERVAL_MS),
  GENERATION_ORPHAN_GRACE_MS: z.coerce.number().int().min(0).max(3_600_000).default(TIMING_DEFAULTS.GENERATION_ORPHAN_GRACE_MS),
  GENERATION_ACCOUNT_MAX_CONCURRENT_JOBS: z.coerce.number().int().min(0).max(100_000).default(32),
  GENERATION_MAX_UPSTREAM_BYTES: z.coerce.number().int().min(1024).max(1024 * 1024 * 1024).default(50 * 1024 * 1024),
})
  .superRefine(checkStorageEnv)
  .superRefine((env, ctx) => {
    // Two renewals fit in a lease, so one late or failed renewal does not free a running job's slot.
    if (env.GENERATION_CHANNEL_LEASE_RENEW_MS * 2 > env.GENERATION_CHANNEL_LEASE_TTL_MS) {
      ctx.addIssue({ code: "custom", path: ["GENERATION_CHANNEL_LEASE_RENEW_MS"], message: "must be at most half of GENERATION_CHANNEL_LEASE_TTL_MS" });
    }
  });

export function loadGenerationConfig(env: NodeJS.ProcessEnv = process.env): GenerationConfig {
  const parsed = parseEnv(schema, env);
  // The job limit and the orphan sweeper against billing's hold (settings-that-must-agree.ts in @orvado/core).
  checkSettingsAgree(
    timingsFrom(
      {
        GENERATION_JOB_TIMEOUT_MS: parsed.GENERATION_JOB_TIMEOUT_MS,
        GENERATION_ORPHAN_GRACE_MS: parsed.GENERATION_ORPHAN_GRACE_MS,
        GENERATION_ORPHAN_SWEEP_INTERVAL_MS: parsed.GENERATION_ORPHAN_SWEEP_INTERVAL_MS,
      },
      env,
    ),
  );
  return {
    host: parsed.GENERATION_HOST,
    port: parsed.GENERATION_PORT,
    internalSecret: parsed.ORVADO_INTERNAL_SECRET,
    databaseUrl: parsed.DATABASE_URL,
    modelsFile: parsed.ORVADO_MODELS_FILE,
    billingUrls: parsed.ORVADO_BILLING_URL,
    urlSigningSecret: parsed.ORVADO_URL_SIGNING_SECRET,
    imageDir: parsed.GENERATION_IMAGE_DIR,
    storage: storageConfigFrom(parsed),
    sweepIntervalMs: parsed.GENERATION_SWEEP_INTERVAL_MS,
    urlTtlSeconds: parsed.GENERATION_URL_TTL_SECONDS,
    jobTimeoutMs: parsed.GENERATION_JOB_TIMEOUT_MS,
    maxImagesPerRequest: parsed.GENERATION_MAX_IMAGES,
    kafka: kafkaSettingsFromEnv(parsed),
    readChannelKey: (variable) => env[variable],
    allowPrivateUpstreams: parsed.GENERATION_ALLOW_PRIVATE_UPSTREAMS,
    breakerFailures: parsed.GENERATION_BREAKER_FAILURES,
    breakerCooldownMs: parsed.GENERATION_BREAKER_COOLDOWN_MS,
    channelLeaseTtlMs: parsed.GENERATION_CHANNEL_LEASE_TTL_MS,
    channelLeaseRenewMs: parsed.GENERATION_CHANNEL_LEASE_RENEW_MS,
    maxUpstreamBytes: parsed.GENERATION_MAX_UPSTREAM_BYTES,
    orphanSweepIntervalMs: parsed.GENERATION_ORPHAN_SWEEP_INTERVAL_MS,
    orphanGraceMs: parsed.GENERATION_ORPHAN_GRACE_MS,
    accountMaxConcurrentJobs: parsed.GENERATION_ACCOUNT_MAX_CONCURRENT_JOBS,
  };
}
