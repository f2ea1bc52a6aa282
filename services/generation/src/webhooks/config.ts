import { z } from "zod";
import { flagSchema } from "@orvado/core";

// The webhook sender's settings, parsed as part of generation's config module (config.ts).

export const webhookEnvShape = {
  /** Base of the image links in a delivery's body (the edge's public address). */
  ORVADO_PUBLIC_URL: z.string().url().optional(),
  WEBHOOK_ALLOW_PRIVATE_URLS: flagSchema,
  WEBHOOK_TIMEOUT_MS: z.coerce.number().int().min(1000).max(30_000).default(10_000),
  WEBHOOK_CLAIM_LEASE_MS: z.coerce.number().int().min(2000).max(600_000).default(60_000),
  WEBHOOK_CONCURRENCY: z.coerce.number().int().min(1).max(256).default(16),
  WEBHOOK_POLL_MS: z.coerce.number().int().min(50).max(60_000).default(1000),
  /** The schedule's first step, shortened only in tests; never longer than the standard's 5 s. */
  WEBHOOK_FIRST_RETRY_MS: z.coerce.number().int().min(100).max(5000).default(5000),
};

const webhookEnv = z.object(webhookEnvShape);

/** A claim must outlive its attempt, or a second sender would take a delivery still being sent. */
export function checkWebhookEnv(env: z.infer<typeof webhookEnv>, ctx: z.RefinementCtx): void {
  if (env.WEBHOOK_CLAIM_LEASE_MS <= env.WEBHOOK_TIMEOUT_MS) {
    ctx.addIssue({ code: "custom", path: ["WEBHOOK_CLAIM_LEASE_MS"], message: "must be longer than WEBHOOK_TIMEOUT_MS" });
  }
}

export interface WebhookConfig {
  /** Unset: image links in bodies are paths, unless the stack gives the edge's address (setLinkBase). */
  publicUrl: string | undefined;
  /** Lets endpoint URLs name loopback and private addresses (local development, tests). */
  allowPrivateUrls: boolean;
  attemptTimeoutMs: number;
  claimLeaseMs: number;
  concurrency: number;
  pollMs: number;
  firstRetryMs: number;
}

export function webhookConfigFrom(env: z.infer<typeof webhookEnv>): WebhookConfig {
  return {
    publicUrl: env.ORVADO_PUBLIC_URL?.replace(/\/+$/, ""),
    allowPrivateUrls: env.WEBHOOK_ALLOW_PRIVATE_URLS,
    attemptTimeoutMs: env.WEBHOOK_TIMEOUT_MS,
    claimLeaseMs: env.WEBHOOK_CLAIM_LEASE_MS,
    concurrency: env.WEBHOOK_CONCURRENCY,
    pollMs: env.WEBHOOK_POLL_MS,
    firstRetryMs: env.WEBHOOK_FIRST_RETRY_MS,
  };
}
