// Orvado as four processes (auth, billing, generation, edge: each service's own
// main.ts, as docker-compose runs them) on a fresh PostgreSQL database. The soak
// uses this: one process holding 10,000 client sockets and 10,000 upstream sockets
// would need more open files than a container usually allows.
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AuthService, BillingService } from "@orvado/proto";
import { internalClient } from "@orvado/rpc";
import { createBenchDatabase } from "./database.ts";
import { freePort, startReportingChild, type Child } from "./processes.ts";
import { logFile, type OrvadoInfo } from "./servers.ts";

const ROOT = new URL("..", import.meta.url).pathname;
const SERVICES = ["auth", "billing", "generation", "edge"] as const;
const FUNDS_MICROS = 1_000_000n * 1_000_000n;

export interface SplitOrvado {
  info: OrvadoInfo;
  /** Process ids in start order: auth, billing, generation, edge. */
  pids: number[];
  services: readonly string[];
  stop(graceMs?: number): Promise<void>;
}

/** The "<service> listening" line each main.ts logs, with its address. */
const listeningLine = (service: string) => (line: string) => {
  if (!line.startsWith("{")) return null;
  const entry = JSON.parse(line) as { msg?: string; url?: string };
  return entry.msg === `${service} listening` ? { url: entry.url } : null;
};

async function fund(authUrl: string, billingUrl: string, secret: string, count: number) {
  const auth = internalClient(AuthService, authUrl, secret);
  const billing = internalClient(BillingService, billingUrl, secret);
  const accounts: { accountId: string; key: string }[] = [];
  for (let index = 0; index < count; index += 1) {
    const { account } = await auth.createAccount({ email: `soak-${index}@example.test`, password: "bench password 1" });
    await billing.topUp({ accountId: account!.accountId, amountMicros: FUNDS_MICROS, note: "benchmark funds", topUpId: `soak_${index}` });
    const { secret: key } = await auth.createKey({ accountId: account!.accountId, name: "soak" });
    accounts.push({ accountId: account!.accountId, key });
  }
  return accounts;
}

export async function startSplitOrvado(options: { modelsFile: string; accounts: number; env?: NodeJS.ProcessEnv }): Promise<SplitOrvado> {
  const database = await createBenchDatabase();
  const dataDir = mkdtempSync(join(tmpdir(), "orvado-soak-"));
  const ports = { AUTH_PORT: await freePort(), BILLING_PORT: await freePort(), GENERATION_PORT: await freePort(), PORT: await freePort() };
  const secret = randomBytes(24).toString("hex");
  const env: NodeJS.ProcessEnv = {
    DATABASE_URL: database.url,
    ORVADO_INTERNAL_SECRET: secret,
    ORVADO_URL_SIGNING_SECRET: randomBytes(24).toString("hex"),
    ORVADO_AUTH_URL: `http://127.0.0.1:${ports.AUTH_PORT}`,
    ORVADO_BILLING_URL: `http://127.0.0.1:${ports.BILLING_PORT}`,
    ORVADO_GENERATION_URL: `http://127.0.0.1:${ports.GENERATION_PORT}`,
    ORVADO_PRICES_FILE: join(ROOT, "config", "prices.json"),
    ORVADO_MODELS_FILE: options.modelsFile,
    GENERATION_IMAGE_DIR: join(dataDir, "images"),
    GENERATION_ALLOW_PRIVATE_UPSTREAMS: "true",
    BENCH_UPSTREAM_KEY: "sk-bench-not-a-real-key",
    ...Object.fromEntries(Object.entries(ports).map(([name, port]) => [name, String(port)])),
    ...options.env,
  };
  const children: Child<{ url: string }>[] = [];
  const stop = async (graceMs = 60_000) => {
    // The edge first, so nothing new arrives while the services behind it finish their jobs.
    for (const child of [...children].reverse()) await child.stop(graceMs);
    await database.drop();
    rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    // In dependency order: each one migrates its own schema as it starts.
    for (const service of SERVICES) {
      children.push(
        await startReportingChild({
          name: `Orvado ${service}`,
          args: ["--import", "tsx", join(ROOT, "services", service, "src", "main.ts")],
          env,
          logFile: logFile(`orvado-${service}`),
          readyLine: listeningLine(service),
        }),
      );
    }
    const accounts = await fund(env.ORVADO_AUTH_URL!, env.ORVADO_BILLING_URL!, secret, Math.max(1, options.accounts));
    const edgeUrl = `http://127.0.0.1:${ports.PORT}`;
    const pids = children.map((child) => child.process.pid!);
    return {
      info: { edgeUrl, key: accounts[0]!.key, accountId: accounts[0]!.accountId, accounts, databaseUrl: database.url, pid: pids[0]! },
      pids,
      services: SERVICES,
      stop,
    };
  } catch (error) {
    await stop(5_000);
    throw error;
  }
}
