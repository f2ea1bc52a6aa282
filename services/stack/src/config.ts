import { join, resolve } from "node:path";
import { z } from "zod";
import { parseEnv, type WithOptional } from "@orvado/core";
import { kafkaEnvShape, kafkaSettingsFromEnv } from "@orvado/events";

const schema = z.object({
  ORVADO_DATA_DIR: z.string().default("./data"),
  DATABASE_URL: z.string().optional(),
  ORVADO_INTERNAL_SECRET: z.string().min(16).optional(),
  ORVADO_URL_SIGNING_SECRET: z.string().min(16).optional(),
  ...kafkaEnvShape,
}).transform((env) => {
  const dataDir = resolve(env.ORVADO_DATA_DIR);
  return {
    dataDir,
    databaseUrl: env.DATABASE_URL ?? join(dataDir, "pglite"),
    kafka: kafkaSettingsFromEnv(env),
    internalSecret: env.ORVADO_INTERNAL_SECRET,
    urlSigningSecret: env.ORVADO_URL_SIGNING_SECRET,
  };
});

/** The embedded stack's settings, as the schema above reads them from the environment. */
export type StackConfig = WithOptional<z.output<typeof schema>, "internalSecret" | "urlSigningSecret">;

export function loadStackConfig(env: NodeJS.ProcessEnv = process.env): StackConfig {
  return parseEnv(schema, env);
}

