import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLogger, type Logger } from "@orvado/core";
import { freshDatabase } from "@orvado/testkit";
import { runCli } from "@orvado/cli";
import { startStack, type RunningStack } from "./index.ts";

/** The admin every test stack starts with (the console tests sign in as it). */
export const TEST_ADMIN = { email: "admin@example.test", password: "admin-password-1" } as const;

export interface TestStack extends RunningStack {
  dataDir: string;
  databaseUrl: string;
  close(): Promise<void>;
}

/**
 * The whole set on ephemeral loopback ports, a fresh database and a temporary data dir.
 * With `databaseUrl` it joins that database instead (a second replica of every service); close() leaves it.
 */
export async function startTestStack(extraEnv: NodeJS.ProcessEnv = {}, options: { logger?: Logger; databaseUrl?: string } = {}): Promise<TestStack> {
  const database = options.databaseUrl ? { url: options.databaseUrl, drop: async () => {} } : await freshDatabase();
  const dataDir = mkdtempSync(join(tmpdir(), "orvado-test-"));
  let stack: RunningStack;
  try {
    stack = await startStack({
      env: {
        ORVADO_DATA_DIR: dataDir,
        DATABASE_URL: database.url,
        PORT: "0",
        AUTH_PORT: "0",
        BILLING_PORT: "0",
        GENERATION_PORT: "0",
        ORVADO_PRICES_FILE: new URL("../../../config/prices.json", import.meta.url).pathname,
        ORVADO_MODELS_FILE: new URL("../../../config/models.json", import.meta.url).pathname,
        ORVADO_ADMIN_EMAIL: TEST_ADMIN.email,
        ORVADO_ADMIN_PASSWORD: TEST_ADMIN.password,
        // Every test polls cost records from 127.0.0.1; the lookup limit has its own test (cost-lookup-limit.test.ts).
        BILLING_COST_LOOKUP_MAX_PER_WINDOW: "1000000",
        ...extraEnv,
      },
      logger: options.logger ?? createLogger("test", process.env.TEST_LOG_LEVEL ?? "silent"),
    });
  } catch (error) {
    // A stack that refused to start (bad settings) leaves no database or directory behind.
    await database.drop();
    rmSync(dataDir, { recursive: true, force: true });
    throw error;
  }
  return {
    ...stack,
    dataDir,
    databaseUrl: database.url,
    async close() {
      await stack.stop();
      await database.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** The real `orvado` CLI against a test stack: exit code, its output (and that output parsed, when JSON), its stderr. */
// biome-ignore lint/suspicious/noExplicitAny: the tests read fields of this JSON answer, whose shape each asserts
export async function runOrvado(stack: TestStack, ...argv: string[]): Promise<{ code: number; stdout: string; json: any; stderr: string }> {
  let stdout = "";
  let stderr = "";
  const code = await runCli(argv, {
    stdout: (text) => (stdout += text),
    stderr: (text) => (stderr += text),
    env: { ORVADO_AUTH_URL: stack.authUrl, ORVADO_BILLING_URL: stack.billingUrl, ORVADO_GENERATION_URL: stack.generationUrl, ORVADO_DATA_DIR: stack.dataDir },
  });
  return { code, stdout, json: /^\s*[[{]/.test(stdout) ? JSON.parse(stdout) : null, stderr };
}
