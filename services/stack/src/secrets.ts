import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export interface StackSecrets {
  internalSecret: string;
  urlSigningSecret: string;
}

/**
 * The embedded default makes its own secrets on first start and keeps them in
 * <dataDir>/secrets.json (mode 0600), so image links and the CLI keep working
 * across restarts. Production passes them in the environment instead.
 */
export function loadOrCreateSecrets(dataDir: string, given: Partial<StackSecrets>): StackSecrets {
  const path = join(dataDir, "secrets.json");
  const stored: Partial<StackSecrets> = existsSync(path) ? JSON.parse(readFileSync(path, "utf8")) : {};
  const secrets: StackSecrets = {
    internalSecret: given.internalSecret ?? stored.internalSecret ?? randomBytes(32).toString("base64url"),
    urlSigningSecret: given.urlSigningSecret ?? stored.urlSigningSecret ?? randomBytes(32).toString("base64url"),
  };
  if (stored.internalSecret !== secrets.internalSecret || stored.urlSigningSecret !== secrets.urlSigningSecret) {
    mkdirSync(dataDir, { recursive: true });
    writeFileSync(path, JSON.stringify(secrets, null, 2), { mode: 0o600 });
  }
  return secrets;
}
