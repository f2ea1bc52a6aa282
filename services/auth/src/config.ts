import { z } from "zod";
import { parseEnv, portSchema } from "@orvado/core";
import type { SessionPolicy } from "./sessions.ts";
import type { SignInLimitPolicy } from "./sign-in-limit.ts";

export interface AuthConfig {
  host: string;
  port: number;
  internalSecret: string;
  databaseUrl: string;
  adminEmail?: string;
  adminPassword?: string;
  /** Console session lifetimes; defaults when unset (12 h idle, 7 days absolute). */
  sessions?: SessionPolicy;
  /** Failed sign-ins allowed per email and per address in a window; defaults 10 and 50 per 15 minutes. */
  signInLimits?: SignInLimitPolicy;
}

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
  });

export function loadAuthConfig(env: NodeJS.ProcessEnv = process.env): AuthConfig {
  const parsed = parseEnv(schema, env);
  return {
    host: parsed.AUTH_HOST,
    port: parsed.AUTH_PORT,
    internalSecret: parsed.ORVADO_INTERNAL_SECRET,
    databaseUrl: parsed.DATABASE_URL,
    ...(parsed.ORVADO_ADMIN_EMAIL !== undefined && { adminEmail: parsed.ORVADO_ADMIN_EMAIL }),
    ...(parsed.ORVADO_ADMIN_PASSWORD !== undefined && { adminPassword: parsed.ORVADO_ADMIN_PASSWORD }),
    sessions: { idleMs: parsed.AUTH_SESSION_IDLE_MS, maxMs: parsed.AUTH_SESSION_MAX_MS },
    signInLimits: {
      windowMs: parsed.AUTH_SIGNIN_WINDOW_MS,
      maxPerAccount: parsed.AUTH_SIGNIN_MAX_FAILURES_PER_ACCOUNT,
      maxPerIp: parsed.AUTH_SIGNIN_MAX_FAILURES_PER_IP,
    },
  };
}
