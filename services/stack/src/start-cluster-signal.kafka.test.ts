import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import OpenAI from "openai";
import { freshDatabase, testKafkaBrokers, uniqueKafkaPrefix, type FreshDatabase } from "@orvado/testkit";
import { runCli } from "@orvado/cli";
import { findHaproxy } from "./balancer.ts";
import { freePort } from "./process-stack.ts";

// `npm run start:cluster` as a process manager runs it: the signal goes to the npm
// process, not to node. npm forwards SIGTERM or SIGINT to the script's process; the
// script execs node, so the signal reaches the cluster's own node process, which
// drains the balancer, lets the job in flight finish and stops every service process
// and HAProxy. Real processes and signals, PostgreSQL, a real Kafka broker, the
// openai SDK over HTTP through HAProxy. Without HAProxy this runs only under CI.

const ROOT = new URL("../../../", import.meta.url).pathname;
const needsBalancer = !findHaproxy() && process.env.CI !== "true";
const started: ChildProcess[] = [];
const databases: FreshDatabase[] = [];
const dataDirs: string[] = [];
let treePids: number[] = [];

afterAll(async () => {
  // A failed test must not leave its processes behind either.
  for (const pid of treePids) if (alive(pid)) process.kill(pid, "SIGKILL");
  for (const child of started) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  for (const database of databases) await database.drop();
  for (const dir of dataDirs) rmSync(dir, { recursive: true, force: true });
}, 60_000);

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** Every process under `root` (the services run in process groups of their own, so a group kill would miss them). */
function descendants(root: number): number[] {
  const rows = execFileSync("ps", ["-e", "-o", "pid=,ppid="], { encoding: "utf8" })
    .trim()
    .split("\n")
    .map((line) => line.trim().split(/\s+/).map(Number) as [number, number]);
  const found: number[] = [];
  const visit = (parent: number) => {
    for (const [pid, ppid] of rows) {
      if (ppid !== parent) continue;
      found.push(pid);
      visit(pid);
    }
  };
  visit(root);
  return found;
}

const refusesConnections = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(false);
    });
    socket.once("error", () => resolve(true));
  });

interface RunningNpm {
  npm: ChildProcess;
  output: () => string;
  port: number;
  authUrl: string;
  billingUrl: string;
  dataDir: string;
}

async function npmStartCluster(): Promise<RunningNpm> {
  const database = await freshDatabase();
  databases.push(database);
  const dataDir = mkdtempSync(join(tmpdir(), "orvado-cluster-signal-"));
  dataDirs.push(dataDir);
  const port = await freePort();
  const { DATABASE_URL: _database, ...env } = process.env;
  const npm = spawn("npm", ["run", "start:cluster"], {
    cwd: ROOT,
    env: {
      ...env,
      DATABASE_URL: database.url,
      KAFKA_BROKERS: testKafkaBrokers().join(","),
      KAFKA_TOPIC_PREFIX: uniqueKafkaPrefix(),
      KAFKA_SESSION_TIMEOUT_MS: "6000",
      ORVADO_DATA_DIR: dataDir,
      PORT: String(port),
      ORVADO_ADMIN_EMAIL: "admin@example.test",
      ORVADO_ADMIN_PASSWORD: "admin-password-1",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  started.push(npm);
  let text = "";
  npm.stdout!.on("data", (chunk) => (text += chunk));
  npm.stderr!.on("data", (chunk) => (text += chunk));
  for (let attempt = 0; !text.includes("Ctrl-C stops"); attempt += 1) {
    if (npm.exitCode !== null || attempt > 2400) throw new Error(`npm run start:cluster did not print its banner:\n${text}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const exported = (name: string) => new RegExp(`export ${name}=(\\S+)`).exec(text)?.[1] ?? "";
  return { npm, output: () => text, port, authUrl: exported("ORVADO_AUTH_URL"), billingUrl: exported("ORVADO_BILLING_URL"), dataDir };
}

async function cli(run: RunningNpm, ...argv: string[]) {
  let stdout = "";
  let stderr = "";
  const code = await runCli(argv, {
    stdout: (text) => (stdout += text),
    stderr: (text) => (stderr += text),
    env: { ORVADO_AUTH_URL: run.authUrl, ORVADO_BILLING_URL: run.billingUrl, ORVADO_DATA_DIR: run.dataDir },
  });
  expect(code, stderr).toBe(0);
  return JSON.parse(stdout);
}

async function newKey(run: RunningNpm): Promise<string> {
  const { account_id: accountId } = await cli(run, "accounts", "create", "--email", "signal@example.test", "--password", "cluster user password");
  await cli(run, "accounts", "topup", "--account", accountId, "--usd", "5");
  return (await cli(run, "keys", "create", "--account", accountId)).key;
}

describe.skipIf(needsBalancer)("npm run start:cluster under a process manager", { timeout: 300_000 }, () => {
  it.each<NodeJS.Signals>(["SIGTERM", "SIGINT"])("stops every process when npm alone is sent %s, after the job in flight is answered", async (signal) => {
    const run = await npmStartCluster();
    const sdk = new OpenAI({ apiKey: await newKey(run), baseURL: `http://127.0.0.1:${run.port}/v1`, maxRetries: 0 });
    const inFlight = sdk.images.generate({ model: "beta", prompt: "[sandbox:delay=4000] a slow harbour", size: "1024x1024" }).withResponse();
    // The job is on a generation process before the signal: give it a second of its four.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    treePids = descendants(run.npm.pid!);
    // npm's script process, the cluster's node process, eight services and HAProxy.
    expect(treePids.length).toBeGreaterThanOrEqual(10);
    const exited = new Promise<number | null>((resolve) => run.npm.once("exit", (code) => resolve(code)));
    run.npm.kill(signal);
    const { data, response } = await inFlight;
    expect(response.status).toBe(200);
    expect(data.data).toHaveLength(1);
    expect(await exited).toBe(0);
    for (let attempt = 0; treePids.some(alive) && attempt < 600; attempt += 1) await new Promise((resolve) => setTimeout(resolve, 100));
    expect(treePids.filter(alive)).toEqual([]);
    expect(await refusesConnections(run.port)).toBe(true);
    expect(run.output()).toContain("Stopped.");
  });
});
