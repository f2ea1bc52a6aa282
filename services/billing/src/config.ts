import { z } from "zod";
import { TIMING_DEFAULTS, checkSettingsAgree, parseEnv, portSchema, timingsFrom } from "@orvado/core";
import { kafkaEnvShape, kafkaSettingsFromEnv, type KafkaSettings } from "@orvado/events";
import { DEFAULT_COST_LOOKUP_LIMIT, type CostLookupLimitPolicy } from "./cost-lookup-limit.ts";

export interface BillingConfig {
  host: string;
  port: number;
  internalSecret: string;
  databaseUrl: string;
  pricesFile: string;
  /** A hold not settled by then is released; longer than the 10-minute job limit. */
  holdTtlMs: number;
  sweepIntervalMs: number;
  kafka: KafkaSettings;
  /** Lookups per client address per window on the public cost lookup; the default when unset. */
  costLookupLimit?: CostLookupLimitPolicy;
}

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
});

export function loadBillingConfig(env: NodeJS.ProcessEnv = process.env): BillingConfig {
  const parsed = parseEnv(schema, env);
  // The hold against the job limit and the sweepers (settings-that-must-agree.ts in @orvado/core).
  checkSettingsAgree(timingsFrom({ BILLING_HOLD_TTL_MS: parsed.BILLING_HOLD_TTL_MS, BILLING_SWEEP_INTERVAL_MS: parsed.BILLING_SWEEP_INTERVAL_MS }, env));
  return {
    host: parsed.BILLING_HOST,
    port: parsed.BILLING_PORT,
    internalSecret: parsed.ORVADO_INTERNAL_SECRET,
    databaseUrl: parsed.DATABASE_URL,
    pricesFile: parsed.ORVADO_PRICES_FILE,
    holdTtlMs: parsed.BILLING_HOLD_TTL_MS,
    sweepIntervalMs: parsed.BILLING_SWEEP_INTERVAL_MS,
    kafka: kafkaSettingsFromEnv(parsed),
    costLookupLimit: { windowMs: parsed.BILLING_COST_LOOKUP_WINDOW_MS, maxPerWindow: parsed.BILLING_COST_LOOKUP_MAX_PER_WINDOW },
  };
}
