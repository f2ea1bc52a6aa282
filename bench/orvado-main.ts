// bench/orvado-main.ts, run bundled (servers.ts benchBundle, as npm start runs the stack): the whole Orvado stack (auth, billing,
// generation, edge; real PostgreSQL) in its own process for the benchmarks, on a
// fresh database that is dropped again on SIGTERM. It makes BENCH_ORVADO_ACCOUNTS
// funded accounts with a key each (default 1) and prints BENCH_READY {edgeUrl, key,
// accountId (the first account's), accounts, databaseUrl, pid, stream ("postgres" or "kafka")}.
//
// Environment: ORVADO_MODELS_FILE (required: the catalog to serve), BENCH_DB_SERVER
// (default postgres://postgres@127.0.0.1:5432/postgres; a fresh orvado_bench_… database is made there), BENCH_LOG_LEVEL (default info),
// anything else the services read (passed through; KAFKA_BROKERS puts the events on Kafka).
import { rmSync } from "node:fs";
import { createLogger } from "@orvado/core";
import { startStack } from "../services/stack/src/index.ts";
import { READY_MARKER } from "./processes.ts";
import { createBenchDatabase } from "./database.ts";
import { benchDataDir } from "./data-dir.ts";
import { fundBenchAccounts } from "./bench-accounts.ts";

const ACCOUNTS = Number(process.env.BENCH_ORVADO_ACCOUNTS ?? 1);

const database = await createBenchDatabase();
const dataDir = benchDataDir("orvado-bench-");
const logger = createLogger("orvado", process.env.BENCH_LOG_LEVEL ?? "info");

async function cleanUp() {
  await database.drop();
  // Under --cpu-prof the parent deletes the images instead, so the profile shows serving, not cleaning up.
  if (process.env.BENCH_PARENT_DELETES_DATA !== "1") rmSync(dataDir, { recursive: true, force: true });
}

async function startFunded() {
  const stack = await startStack({
    env: {
      ...process.env,
      ORVADO_DATA_DIR: dataDir,
      DATABASE_URL: database.url,
      PORT: process.env.PORT ?? "0",
      AUTH_PORT: "0",
      BILLING_PORT: "0",
      GENERATION_PORT: "0",
      ORVADO_PRICES_FILE: new URL("../config/prices.json", import.meta.url).pathname,
      ORVADO_ADMIN_EMAIL: "admin@example.test",
      ORVADO_ADMIN_PASSWORD: "admin-password-1",
    },
    logger,
  });
  const accounts = await fundBenchAccounts({ authUrls: stack.authUrl, billingUrls: stack.billingUrl, internalSecret: stack.internalSecret }, ACCOUNTS, "bench");
  return { stack, accounts };
}

// A stack that cannot start (for example a catalog it rejects) must not leave its database behind.
const started = await startFunded().catch(async (error: unknown) => {
  await cleanUp();
  console.error(error);
  process.exit(1);
});
const { stack, accounts } = started;
const ready = { edgeUrl: stack.edgeUrl, key: accounts[0]!.key, accountId: accounts[0]!.accountId, accounts, databaseUrl: database.url, dataDir, pid: process.pid, stream: stack.stream.name };
process.stdout.write(`${READY_MARKER}${JSON.stringify(ready)}\n`);

let stopping = false;
async function stop() {
  if (stopping) return;
  stopping = true;
  try {
    await stack.stop();
  } finally {
    await cleanUp();
    // An explicit exit writes the --cpu-prof profile.
    process.exit(0);
  }
}
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
