import { z } from "zod";
import { parseEnv, portSchema, type WithOptional } from "@orvado/core";
import type { SessionPolicy } from "./sessions.ts";
import type { SignInLimitPolicy } from "./sign-in-limit.ts";

const optionalText = z
  .string()
  .optional()
  .transform((text) => (text === undefined || text.trim() === "" ? undefined : text));

const schema = z
  .object({
    AUTH_HOST: z.string().min(1).default("127.0.0.1"),
    AUTH_PORT: portSchema.default(7101),
    ORVADO_INTERNAL_SECRET: z.string().min(16, "must be at least 16 characters"),
    DATABASE_URL: z.string().min(1).default("./data/pglite"),
    ORVADO_ADMIN_EMAIL: optionalText,
    ORVADO_ADMIN_PASSWORD: optionalText.refine((text) => text === undefined || text.length >= 8, {
      message: "must be at least 8 characters",
    }),
    AUTH_SESSION_IDLE_MS: z.coerce.number().int().min(1000).default(12 * 3_600_000),
    AUTH_SESSION_MAX_MS: z.coerce.number().int().min(1000).default(7 * 86_400_000),
    AUTH_SIGNIN_WINDOW_MS: z.coerce.number().int().min(1000).default(15 * 60_000),
    AUTH_SIGNIN_MAX_FAILURES_PER_ACCOUNT: z.coerce.number().int().min(1).default(10),
    AUTH_SIGNIN_MAX_FAILURES_PER_IP: z.coerce.number().int().min(1).default(50),
  })
  // Half a credential would silently fall back to a generated password; refuse it instead.
  .refine((env) => (env.ORVADO_ADMIN_EMAIL === undefined) === (env.ORVADO_ADMIN_PASSWORD === undefined), {
    message: "set both ORVADO_ADMIN_EMAIL and ORVADO_ADMIN_PASSWORD, or neither",
    path: ["ORVADO_ADMIN_PASSWORD"],
  })
  .transform((env) => ({
    host: env.AUTH_HOST,
    port: env.AUTH_PORT,
    internalSecret: env.ORVADO_INTERNAL_SECRET,
    databaseUrl: env.DATABASE_URL,
    ...(env.ORVADO_ADMIN_EMAIL !== undefined && { adminEmail: env.ORVADO_ADMIN_EMAIL }),
    ...(env.ORVADO_ADMIN_PASSWORD !== undefined && { adminPassword: env.ORVADO_ADMIN_PASSWORD }),
    /** Console session lifetimes; defaults when unset (12 h idle, 7 days absolute). */
    sessions: { idleMs: env.AUTH_SESSION_IDLE_MS, maxMs: env.AUTH_SESSION_MAX_MS } satisfies SessionPolicy,
    /** Failed sign-ins allowed per email and per address in a window; defaults 10 and 50 per 15 minutes. */
    signInLimits: {
      windowMs: env.AUTH_SIGNIN_WINDOW_MS,
      maxPerAccount: env.AUTH_SIGNIN_MAX_FAILURES_PER_ACCOUNT,
      maxPerIp: env.AUTH_SIGNIN_MAX_FAILURES_PER_IP,
    } satisfies SignInLimitPolicy,
  }));

/** Auth's settings, as the schema above reads them from the environment. */
export type AuthConfig = WithOptional<z.output<typeof schema>, "sessions" | "signInLimits">;

export function loadAuthConfig(env: NodeJS.ProcessEnv = process.env): AuthConfig {
  return parseEnv(schema, env);
}

