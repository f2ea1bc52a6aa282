import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { z } from "zod";
import { parseEnv, readAddressesFile, serviceUrlsSchema } from "@orvado/core";

// The only module that reads the environment (and the files of the data dir it points to:
// the secret, and the addresses `npm start` leaves while it runs).

/** The operator must fix the setup; the CLI exits 2 with this message. */
export class ConfigError extends Error {}

const schema = z.object({
  ORVADO_AUTH_URL: serviceUrlsSchema("http://127.0.0.1:7101"),
  ORVADO_BILLING_URL: serviceUrlsSchema("http://127.0.0.1:7102"),
  ORVADO_GENERATION_URL: serviceUrlsSchema("http://127.0.0.1:7103"),
  ORVADO_INTERNAL_SECRET: z.string().optional(),
  ORVADO_DATA_DIR: z.string().min(1).default("./data"),
}).transform((env) => ({
  /** Each service's replicas (one URL or several). */
  authUrls: env.ORVADO_AUTH_URL,
  billingUrls: env.ORVADO_BILLING_URL,
  /** Generation serves webhook endpoints (WebhookService). */
  generationUrls: env.ORVADO_GENERATION_URL,
  // The secret file is read only once the variables are valid (a transform runs after them).
  secret: env.ORVADO_INTERNAL_SECRET !== undefined && env.ORVADO_INTERNAL_SECRET !== "" ? env.ORVADO_INTERNAL_SECRET : readSecretsFile(env.ORVADO_DATA_DIR),
}));

/** The CLI's settings, as the schema above reads them from the environment (and the secrets file). */
export type CliConfig = z.output<typeof schema>;

const secretsFileSchema = z.object({ internalSecret: z.string().min(1) });

export function loadConfig(env: NodeJS.ProcessEnv): CliConfig {
  try {
    return parseEnv(schema, withRunningStackAddresses(env));
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    // parseEnv lists each problem on its own line; the CLI promises one.
    throw new ConfigError((error as Error).message.replace(/\s*\n\s*/g, " "));
  }
}

const ADDRESS_VARIABLES = { ORVADO_AUTH_URL: "auth", ORVADO_BILLING_URL: "billing", ORVADO_GENERATION_URL: "generation" } as const;

/**
 * The environment, with each service address it leaves unset taken from the addresses file of
 * the stack running on the data dir (`npm start`, start:cluster); a variable that is set wins.
 * Without a running stack's file (none, or one whose process is gone) the defaults apply.
 */
function withRunningStackAddresses(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const unset = Object.entries(ADDRESS_VARIABLES).filter(([variable]) => !env[variable]);
  if (unset.length === 0) return env;
  const { addresses } = readAddressesFile(resolve(env.ORVADO_DATA_DIR || "./data"));
  if (!addresses) return env;
  return { ...env, ...Object.fromEntries(unset.map(([variable, service]) => [variable, addresses[service].join(",")])) };
}

/** Reads the secret `npm start` wrote for the embedded default, so a local operator needs no setup. */
function readSecretsFile(dataDir: string): string {
  const path = resolve(dataDir, "secrets.json");
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") {
      throw new ConfigError(
        `no internal secret: set ORVADO_INTERNAL_SECRET, or run from the directory where \`npm start\` runs (looked for ${path})`,
      );
    }
    throw new ConfigError(`cannot read ${path}: ${(error as Error).message}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new ConfigError(`${path} is not valid JSON; set ORVADO_INTERNAL_SECRET instead`);
  }
  const secrets = secretsFileSchema.safeParse(json);
  if (!secrets.success) {
    throw new ConfigError(`${path} has no "internalSecret"; set ORVADO_INTERNAL_SECRET instead`);
  }
  return secrets.data.internalSecret;
}
