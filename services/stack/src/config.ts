import { join, resolve } from "node:path";
import { z } from "zod";
import { parseEnv } from "@orvado/core";
import { kafkaEnvShape, kafkaSettingsFromEnv, type KafkaSettings } from "@orvado/events";

export interface StackConfig {
  dataDir: string;
  databaseUrl: string;
  kafka: KafkaSettings;
  internalSecret?: string;
  urlSigningSecret?: string;
}

const schema = z.object({
  ORVADO_DATA_DIR: z.string().default("./data"),
  DATABASE_URL: z.string().optional(),
  ORVADO_INTERNAL_SECRET: z.string().min(16).optional(),
  ORVADO_URL_SIGNING_SECRET: z.string().min(16).optional(),
  ...kafkaEnvShape,
});

export function loadStackConfig(env: NodeJS.ProcessEnv = process.env): StackConfig {
  const parsed = parseEnv(schema, env);
  const dataDir = resolve(parsed.ORVADO_DATA_DIR);
  return {
    dataDir,
    databaseUrl: parsed.DATABASE_URL ?? join(dataDir, "pglite"),
    kafka: kafkaSettingsFromEnv(parsed),
    internalSecret: parsed.ORVADO_INTERNAL_SECRET,
    urlSigningSecret: parsed.ORVADO_URL_SIGNING_SECRET,
  };
}
