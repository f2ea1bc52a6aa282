import { z } from "zod";
import { parseEnv, portSchema } from "@orvado/core";

export interface AuthConfig {
  host: string;
  port: number;
  internalSecret: string;
  databaseUrl: string;
  adminEmail?: string;
  adminPassword?: string;
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
  };
}
