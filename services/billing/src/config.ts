import { z } from "zod";
import { TIMING_DEFAULTS, checkSettingsAgree, parseEnv, portSchema, timingsFrom, type WithOptional } from "@orvado/core";
import { kafkaEnvShape, kafkaSettingsFromEnv } from "@orvado/events";
import { DEFAULT_COST_LOOKUP_LIMIT, type CostLookupLimitPolicy } from "./cost-lookup-limit.ts";

const schema = z.object({
  BILLING_HOST: z.string().default("127.0.0.1"),
  BILLING_PORT: portSchema.default(7102),
  ORVADO_INTERNAL_SECRET: z.string().min(16, "must be at least 16 characters"),
  DATABASE_URL: z.string().default("./data/pglite"),
  ORVADO_PRICES_FILE: z.string().default("./config/prices.json"),
  BILLING_HOLD_TTL_MS: z.coerce.number().int().min(1000).default(TIMING_DEFAULTS.BILLING_HOLD_TTL_MS),
  BILLING_SWEEP_INTERVAL_MS: z.coerce.number().int().min(100).default(TIMING_DEFAULTS.BILLING_SWEEP_INTERVAL_MS),
  ...kafkaEnvShape,
  BILLING_COST_LOOKUP_MAX_PER_WINDOW: z.coerce.number().int().min(1).max(1_000_000).default(DEFAULT_COST_LOOKUP_LIMIT.maxPerWindow),
  BILLING_COST_LOOKUP_WINDOW_MS: z.coerce.number().int().min(1000).max(86_400_000).default(DEFAULT_COST_LOOKUP_LIMIT.windowMs),
})
  .transform((env) => ({
    host: env.BILLING_HOST,
    port: env.BILLING_PORT,
    internalSecret: env.ORVADO_INTERNAL_SECRET,
    databaseUrl: env.DATABASE_URL,
    pricesFile: env.ORVADO_PRICES_FILE,
    /** A hold not settled by then is released; longer than the 10-minute job limit. */
    holdTtlMs: env.BILLING_HOLD_TTL_MS,
    sweepIntervalMs: env.BILLING_SWEEP_INTERVAL_MS,
    kafka: kafkaSettingsFromEnv(env),
    /** Lookups per client address per window on the public cost lookup; the default when unset. */
    costLookupLimit: { windowMs: env.BILLING_COST_LOOKUP_WINDOW_MS, maxPerWindow: env.BILLING_COST_LOOKUP_MAX_PER_WINDOW } satisfies CostLookupLimitPolicy,
  }));

/** Billing's settings, as the schema above reads them from the environment. */
export type BillingConfig = WithOptional<z.output<typeof schema>, "costLookupLimit">;

export function loadBillingConfig(env: NodeJS.ProcessEnv = process.env): BillingConfig {
  const config = parseEnv(schema, env);
  // The hold against the job limit and the sweepers (settings-that-must-agree.ts in @orvado/core).
  checkSettingsAgree(timingsFrom({ BILLING_HOLD_TTL_MS: config.holdTtlMs, BILLING_SWEEP_INTERVAL_MS: config.sweepIntervalMs }, env));
  return config;
}
