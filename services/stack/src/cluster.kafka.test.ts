import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import OpenAI from "openai";
import { openDb, type Db } from "@orvado/db";
import { freshDatabase, testKafkaBrokers, uniqueKafkaPrefix, type FreshDatabase } from "@orvado/testkit";
import { runCli } from "@orvado/cli";
import { findHaproxy } from "./balancer.ts";
import { startCluster, type RunningCluster } from "./cluster.ts";
import { freePort } from "./process-stack.ts";
import { WebhookReceiver, verified } from "./webhook-receiver.ts";

// `npm run start:cluster` through the module behind it (cluster.ts): two
// processes each of auth, billing, generation and edge (their bundles) on
// PostgreSQL and a real Kafka broker, HAProxy in front of the edges. The openai
// SDK talks HTTP to the balancer only; the CLI calls the auth and billing
// replicas over HTTP/2 with their URL lists. Without HAProxy installed this runs
// only under CI, where .ci/run installs it.

const needsBalancer = !findHaproxy() && process.env.CI !== "true";
let database: FreshDatabase;
let dataDir: string;
let cluster: RunningCluster;
let db: Db;
let stopped = false;
let receiver: WebhookReceiver;
const logs: string[] = [];

beforeAll(async () => {
  if (needsBalancer) return;
  database = await freshDatabase();
  receiver = await WebhookReceiver.start();
  dataDir = mkdtempSync(join(tmpdir(), "orvado-cluster-"));
  cluster = await startCluster({
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      DATABASE_URL: database.url,
      KAFKA_BROKERS: testKafkaBrokers().join(","),
      KAFKA_TOPIC_PREFIX: uniqueKafkaPrefix(),
      KAFKA_SESSION_TIMEOUT_MS: "6000",
      ORVADO_DATA_DIR: dataDir,
      PORT: String(await freePort()),
      ORVADO_ADMIN_EMAIL: "admin@example.test",
      ORVADO_ADMIN_PASSWORD: "admin-password-1",
      // The test polls cost records from one address; the lookup limit has its own test.
      BILLING_COST_LOOKUP_MAX_PER_WINDOW: "1000000",
      // The test's webhook receiver listens on 127.0.0.1.
      WEBHOOK_ALLOW_PRIVATE_URLS: "true",
    },
    onLog: (source, line) => logs.push(`[${source}] ${line}`),
  });
  db = await openDb(database.url, { maxConnections: 2 });
}, 180_000);

afterAll(async () => {
  if (cluster && !stopped) await cluster.stop();
  await db?.close();
  await receiver?.close();
  await database?.drop();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
}, 120_000);

async function cli(...argv: string[]) {
  let stdout = "";
  let stderr = "";
  const code = await runCli(argv, {
    stdout: (text) => (stdout += text),
    stderr: (text) => (stderr += text),
    env: { ORVADO_AUTH_URL: cluster.urls.auth.join(","), ORVADO_BILLING_URL: cluster.urls.billing.join(","), ORVADO_DATA_DIR: dataDir },
  });
  expect(code, stderr).toBe(0);
  return JSON.parse(stdout);
}

async function newAccount(email: string): Promise<{ accountId: string; key: string }> {
  const { account_id: accountId } = await cli("accounts", "create", "--email", email, "--password", "cluster user password");
  await cli("accounts", "topup", "--account", accountId, "--usd", "5");
  return { accountId, key: (await cli("keys", "create", "--account", accountId)).key };
}

const newKey = async (email: string) => (await newAccount(email)).key;

async function costOf(requestId: string): Promise<{ status: string; amount_micros?: number }> {
  let cost: { status: string; amount_micros?: number } = { status: "pending" };
  for (let attempt = 0; attempt < 300 && cost.status === "pending"; attempt += 1) {
    cost = (await (await fetch(`${cluster.url}/api/cost/request/${requestId}`)).json()) as typeof cost;
    if (cost.status === "pending") await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return cost;
}

const refusesConnections = (url: string) =>
  new Promise<boolean>((resolve) => {
    const { hostname, port } = new URL(url);
    const socket = connect(Number(port), hostname);
    socket.once("connect", () => {
      socket.destroy();
      resolve(false);
    });
    socket.once("error", () => resolve(true));
  });

const processAlive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe.skipIf(needsBalancer)("start:cluster: two processes of every service behind HAProxy (Kafka, PostgreSQL, HTTP and HTTP/2)", () => {
  it("runs two processes of each service and one balancer in front of the edges", () => {
    expect(Object.keys(cluster.processes.pids()).sort()).toEqual(
      ["auth", "auth#2", "billing", "billing#2", "edge", "edge#2", "generation", "generation#2"].sort(),
    );
    expect(new URL(cluster.url).port).not.toBe("");
  });

  it("leaves every replica's address for the CLI, which needs no address variable, and names the channels for the banner", async () => {
    let stdout = "";
    const code = await runCli(["channels", "list"], { stdout: (text) => (stdout += text), stderr: () => {}, env: { ORVADO_DATA_DIR: dataDir } });
    expect(code).toBe(0);
    expect(JSON.parse(stdout).channels.map((row: { model: string }) => row.model)).toContain("beta");
    const file = JSON.parse(readFileSync(join(dataDir, "addresses.json"), "utf8"));
    expect([file.edge, file.auth, file.billing, file.generation]).toEqual([cluster.url, cluster.urls.auth, cluster.urls.billing, cluster.urls.generation]);
    expect(cluster.models.map((model) => model.id)).toContain("alpha-2.5-flare");
  });

  it("serves the openai SDK through the balancer: images from both generation processes, each charged once", async () => {
    const sdk = new OpenAI({ apiKey: await newKey("cluster-user@example.test"), baseURL: `${cluster.url}/v1`, maxRetries: 0 });
    const requestIds: string[] = [];
    for (let i = 0; i < 4; i++) {
      const { data, response } = await sdk.images.generate({ model: "beta", prompt: `a lighthouse, take ${i}`, size: "1024x1024" }).withResponse();
      const url = data.data?.[0]?.url ?? "";
      // Links name the balancer (the Host the client used), and any edge serves them through generation.
      expect(url.startsWith(`${cluster.url}/v1/files/`)).toBe(true);
      for (let read = 0; read < 2; read++) {
        const image = await fetch(url);
        expect(image.status).toBe(200);
        expect(image.headers.get("content-type")).toBe("image/png");
        expect((await image.arrayBuffer()).byteLength).toBeGreaterThan(0);
      }
      requestIds.push(response.headers.get("x-request-id")!);
    }
    // Each generation process writes its own segment files into the one shared directory.
    expect(readdirSync(join(cluster.imageDir, "segments")).filter((name) => name.endsWith(".seg")).length).toBe(2);
    for (const requestId of requestIds) expect(await costOf(requestId)).toMatchObject({ status: "charged" });
    const jobs = await db.query<{ n: string }>("SELECT count(*) AS n FROM generation.jobs WHERE status = 'succeeded'");
    expect(Number(jobs.rows[0]!.n)).toBe(4);
  });

  it("signs a webhook from a generation process whose image link names the balancer, which serves it", async () => {
    const { accountId, key } = await newAccount("cluster-webhooks@example.test");
    const created = await cli("webhooks", "create", "--account", accountId, "--url", `${receiver.url}/cluster`, "--events", "image.generation.succeeded");
    const sdk = new OpenAI({ apiKey: key, baseURL: `${cluster.url}/v1`, maxRetries: 0 });
    const { response } = await sdk.images.generate({ model: "beta", prompt: "a lighthouse for the webhook", size: "1024x1024" }).withResponse();
    const [delivery] = await receiver.waitFor("/cluster", 1);
    const body = verified(created.secret, delivery!);
    expect(body.data.id).toBe(response.headers.get("x-request-id"));
    const link: string = body.data.images[0].url;
    expect(link.startsWith(`${cluster.url}/v1/files/`), link).toBe(true);
    expect((await fetch(link)).status).toBe(200);
  });

  it("keeps serving with one generation and one billing process killed (-9): every job answered and charged once", async () => {
    const { accountId, key } = await newAccount("cluster-kill@example.test");
    const sdk = new OpenAI({ apiKey: key, baseURL: `${cluster.url}/v1`, maxRetries: 0 });
    // Both processes in use first, so the edges hold connections to the ones about to die.
    await sdk.images.generate({ model: "beta", prompt: "before", size: "1024x1024" });
    await sdk.images.generate({ model: "beta", prompt: "before", size: "1024x1024" });
    await cluster.processes.kill("generation#2");
    await cluster.processes.kill("billing#2");
    const requestIds: string[] = [];
    for (let i = 0; i < 6; i++) {
      const { data, response } = await sdk.images.generate({ model: "beta", prompt: `with replicas down, take ${i}`, size: "1024x1024" }).withResponse();
      expect(data.data).toHaveLength(1);
      expect((await fetch(data.data![0]!.url!)).status).toBe(200);
      requestIds.push(response.headers.get("x-request-id")!);
    }
    // No job ran twice: one job per request, and the balance fell by exactly the charges.
    const jobs = await db.query<{ n: string }>("SELECT count(*) AS n FROM generation.jobs WHERE account_id = $1", [accountId]);
    expect(Number(jobs.rows[0]!.n)).toBe(8);
    let charged = 0;
    for (const requestId of requestIds) {
      const cost = await costOf(requestId);
      expect(cost.status).toBe("charged");
      charged += cost.amount_micros!;
    }
    const balance = await cli("accounts", "show", "--account", accountId);
    const chargedBefore = 5_000_000 - charged - Number(balance.balance_micros);
    // The two jobs before the kill cost what the six after cost per job.
    expect(chargedBefore).toBe((charged / 6) * 2);
    await cluster.processes.startReplica("generation", 2);
    await cluster.processes.startReplica("billing", 2);
  });

  it("stops cleanly: a job in flight finishes and is answered, then every process exits", async () => {
    const sdk = new OpenAI({ apiKey: await newKey("cluster-stop@example.test"), baseURL: `${cluster.url}/v1`, maxRetries: 0 });
    const inFlight = sdk.images.generate({ model: "beta", prompt: "[sandbox:delay=4000] a slow harbour", size: "1024x1024" }).withResponse();
    // Stop only once the job is running on a generation process.
    for (let attempt = 0; attempt < 600; attempt++) {
      const running = await db.query<{ n: string }>("SELECT count(*) AS n FROM generation.jobs WHERE status = 'running'");
      if (Number(running.rows[0]!.n) === 1) break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const pids = Object.values(cluster.processes.pids());
    const stopping = cluster.stop();
    stopped = true;
    const { data, response } = await inFlight;
    expect(response.status).toBe(200);
    expect(data.data).toHaveLength(1);
    await stopping;
    const job = await db.query<{ status: string }>("SELECT status FROM generation.jobs WHERE request_id = $1", [response.headers.get("x-request-id")]);
    expect(job.rows[0]?.status).toBe("succeeded");
    expect(await refusesConnections(cluster.url)).toBe(true);
    expect(pids.filter(processAlive)).toEqual([]);
    expect(existsSync(join(dataDir, "addresses.json"))).toBe(false);
    expect(logs.filter((line) => /"level":(50|60)/.test(line) && !/kafkajs/.test(line))).toEqual([]);
  });
});
