import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import OpenAI from "openai";
import { freshDatabase, testKafkaBrokers, uniqueKafkaPrefix, type FreshDatabase } from "@orvado/testkit";
import { runCli } from "@orvado/cli";

// Issue F's acceptance as a user runs it: `npm start` (start.ts, one process) with
// KAFKA_BROKERS and PostgreSQL says in its banner that billing events go to Kafka;
// the openai SDK generates an image over HTTP and the cost lookup shows the charge,
// settled by billing from the Kafka topic. The CLI creates the account over RPC.

const START = fileURLToPath(new URL("./start.ts", import.meta.url));
const ROOT = fileURLToPath(new URL("../../..", import.meta.url));
let database: FreshDatabase;
let dataDir: string;
let child: ChildProcess;
let output = "";

beforeAll(async () => {
  database = await freshDatabase();
  dataDir = mkdtempSync(join(tmpdir(), "orvado-start-kafka-"));
  child = spawn(process.execPath, ["--import", "tsx", START], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      ORVADO_DATA_DIR: dataDir,
      DATABASE_URL: database.url,
      KAFKA_BROKERS: testKafkaBrokers().join(","),
      KAFKA_TOPIC_PREFIX: uniqueKafkaPrefix(),
      PORT: "0",
      AUTH_PORT: "0",
      BILLING_PORT: "0",
      GENERATION_PORT: "0",
      ORVADO_ADMIN_EMAIL: "admin@example.test",
      ORVADO_ADMIN_PASSWORD: "admin-password-1",
      LOG_LEVEL: "warn",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  child.stdout!.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
  child.stderr!.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
  const deadline = Date.now() + 90_000;
  while (!output.includes("Ctrl-C stops")) {
    if (child.exitCode !== null) throw new Error(`npm start exited with ${child.exitCode}:\n${output}`);
    if (Date.now() > deadline) throw new Error(`no banner in 90 s:\n${output}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}, 120_000);

afterAll(async () => {
  if (child && child.exitCode === null) {
    child.kill("SIGTERM");
    await once(child, "exit");
  }
  await database?.drop();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

const bannerValue = (label: string) => new RegExp(`${label}:\\s+(\\S+)`).exec(output)?.[1] ?? "";

async function cli(...argv: string[]) {
  let stdout = "";
  const urls = /auth (http:\/\/\S+), billing (http:\/\/\S+),/.exec(output)!;
  const code = await runCli(argv, {
    stdout: (text) => (stdout += text),
    stderr: () => {},
    env: { ORVADO_AUTH_URL: urls[1]!, ORVADO_BILLING_URL: urls[2]!, ORVADO_DATA_DIR: dataDir },
  });
  expect(code, stdout).toBe(0);
  return JSON.parse(stdout);
}

describe("npm start on Kafka and PostgreSQL (one process, real broker, openai SDK over HTTP)", () => {
  it("says in its banner that billing events go to Kafka", () => {
    expect(output).toContain(`Billing events:           Kafka at ${testKafkaBrokers().join(", ")} (KAFKA_BROKERS)`);
  });

  it("generates an image and shows its charge, settled from the Kafka topic", async () => {
    const { account_id: accountId } = await cli("accounts", "create", "--email", "kafka-user@example.test", "--password", "kafka user password");
    await cli("accounts", "topup", "--account", accountId, "--usd", "1");
    const { key } = await cli("keys", "create", "--account", accountId);
    const api = bannerValue("API \\(OpenAI-compatible\\)");
    const sdk = new OpenAI({ apiKey: key, baseURL: api, maxRetries: 0 });
    const { data, response } = await sdk.images.generate({ model: "beta", prompt: "a harbour at dawn", size: "1024x1024" }).withResponse();
    expect(data.data?.[0]?.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1\/files\//);
    const requestId = response.headers.get("x-request-id")!;
    const base = api.replace(/\/v1$/, "");
    let cost: { status: string; cost_usd?: string } = { status: "pending" };
    for (let attempt = 0; attempt < 300 && cost.status === "pending"; attempt += 1) {
      cost = (await (await fetch(`${base}/api/cost/request/${requestId}`)).json()) as typeof cost;
      if (cost.status === "pending") await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(cost).toMatchObject({ status: "charged" });
  });
});
