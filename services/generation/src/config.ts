import { z } from "zod";
import { IMAGE_COUNT_CEILING, TIMING_DEFAULTS, checkSettingsAgree, flagSchema, parseEnv, portSchema, rpcTransportSchema, serviceUrlsSchema, timingsFrom } from "@orvado/core";
import { kafkaEnvShape, kafkaSettingsFromEnv } from "@orvado/events";
import { checkStorageEnv, storageConfigFrom, storageEnvShape } from "./storage/config.ts";
import { checkWebhookEnv, webhookConfigFrom, webhookEnvShape } from "./webhooks/config.ts";

const schema = z.object({
  GENERATION_HOST: z.string().default("127.0.0.1"),
  GENERATION_PORT: portSchema.default(7103),
  ORVADO_INTERNAL_SECRET: z.string().min(16, "must be at least 16 characters"),
  DATABASE_URL: z.string().default("./data/pglite"),
  ORVADO_MODELS_FILE: z.string().default("./config/models.json"),
  ORVADO_BILLING_URL: serviceUrlsSchema("http://127.0.0.1:7102"),
  ORVADO_RPC_TRANSPORT: rpcTransportSchema,
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
  GENERATION_ORPHAN_GRACE_MS: z.coerce.number().int().min(0).max(3_600_000).default(TIMING_DEFAULTS.GENERATION_ORPHAN_GRACE_MS),
  GENERATION_ACCOUNT_MAX_CONCURRENT_JOBS: z.coerce.number().int().min(0).max(100_000).default(32),
  GENERATION_MAX_UPSTREAM_BYTES: z.coerce.number().int().min(1024).max(1024 * 1024 * 1024).default(50 * 1024 * 1024),
  ...webhookEnvShape,
})
  .superRefine(checkStorageEnv)
  .superRefine(checkWebhookEnv)
  .transform((env) => ({
    host: env.GENERATION_HOST,
    port: env.GENERATION_PORT,
    internalSecret: env.ORVADO_INTERNAL_SECRET,
    databaseUrl: env.DATABASE_URL,
    modelsFile: env.ORVADO_MODELS_FILE,
    /** Billing's replicas (one URL or several). */
    billingUrls: env.ORVADO_BILLING_URL,
    /** In-process to billing in this process ("colocated"), or always over HTTP/2. */
    rpcTransport: env.ORVADO_RPC_TRANSPORT,
    urlSigningSecret: env.ORVADO_URL_SIGNING_SECRET,
    imageDir: env.GENERATION_IMAGE_DIR,
    /** Local disk or an S3-compatible bucket (storage/config.ts). */
    storage: storageConfigFrom(env),
    urlTtlSeconds: env.GENERATION_URL_TTL_SECONDS,
    /** A job is given up after 10 minutes at most (docs/api.md#how-long-a-call-takes). */
    jobTimeoutMs: env.GENERATION_JOB_TIMEOUT_MS,
    maxImagesPerRequest: env.GENERATION_MAX_IMAGES,
    kafka: kafkaSettingsFromEnv(env),
    /** Lets upstream-provided URLs reach loopback/private addresses (local simulators, tests). */
    allowPrivateUpstreams: env.GENERATION_ALLOW_PRIVATE_UPSTREAMS,
    /** Consecutive upstream failures that open a channel's circuit breaker. */
    breakerFailures: env.GENERATION_BREAKER_FAILURES,
    /** How long an open breaker keeps its channel out of rotation before a trial call. */
    breakerCooldownMs: env.GENERATION_BREAKER_COOLDOWN_MS,
    /** A channel slot's lease: a replica killed with -9 frees its slots at most this long after (capacity.ts). */
    channelLeaseTtlMs: env.GENERATION_CHANNEL_LEASE_TTL_MS,
    /** How often a replica renews the leases of the channel slots it holds, in one statement: three times a lease, so one late or failed renewal does not free a running job's slot. */
    channelLeaseRenewMs: Math.floor(env.GENERATION_CHANNEL_LEASE_TTL_MS / 3),
    /** Largest upstream answer (JSON or image download) read, in bytes. */
    maxUpstreamBytes: env.GENERATION_MAX_UPSTREAM_BYTES,
    /** How often jobs lost with a stopped process are failed (orphan-jobs.ts): every half grace, at most 30 s apart, so the sweep adds at most half a grace to a lost job's end. */
    orphanSweepIntervalMs: Math.max(100, Math.min(30_000, Math.floor(env.GENERATION_ORPHAN_GRACE_MS / 2))),
    /** Added to the job time limit before a 'running' job counts as lost. */
    orphanGraceMs: env.GENERATION_ORPHAN_GRACE_MS,
    /** Jobs one account may run at once unless auth gives it a limit of its own; 0 = no limit (account-admission.ts). */
    accountMaxConcurrentJobs: env.GENERATION_ACCOUNT_MAX_CONCURRENT_JOBS,
    /** The webhook sender's settings (webhooks/config.ts). */
    webhooks: webhookConfigFrom(env),
  }));

/** Generation's settings: what the schema above reads from the environment, and how channel keys are read. */
export type GenerationConfig = z.output<typeof schema> & {
  /**
   * Reads the environment variable a channel's `apiKeyEnv` names (docs/providers.md). A
   * function rather than a copy of the environment, so logging the config never shows a key.
   */
  readChannelKey(variable: string): string | undefined;
};

export function loadGenerationConfig(env: NodeJS.ProcessEnv = process.env): GenerationConfig {
  const config = parseEnv(schema, env);
  // The job limit and the orphan sweeper against billing's hold (settings-that-must-agree.ts in @orvado/core).
  checkSettingsAgree(
    timingsFrom(
      {
        GENERATION_JOB_TIMEOUT_MS: config.jobTimeoutMs,
        GENERATION_ORPHAN_GRACE_MS: config.orphanGraceMs,
      },
      env,
    ),
  );
  return { ...config, readChannelKey: (variable) => env[variable] };
}

