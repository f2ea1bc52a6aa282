import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";

// `npm start` as a process manager runs it: the signal goes to the npm process it started, not to
// node. npm runs the script through `sh -c`; the script execs node, so npm's forwarded SIGTERM or
// SIGINT reaches node itself, which stops and exits, and npm with it: no process is left behind.
// The first start's banner says where the generated admin password was printed; a second start
// on the same data, before the admin has changed it, says it was printed at the first start.
// Real processes, real signals, the embedded PGlite in a temporary data dir.

const ROOT = new URL("../../../", import.meta.url).pathname;
const dataDir = mkdtempSync(join(tmpdir(), "orvado-npm-start-"));
const started: ChildProcess[] = [];
const nodePids: number[] = [];

afterAll(() => {
  // A failed test must not leave its processes behind either.
  for (const child of started) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  for (const pid of nodePids) if (alive(pid)) process.kill(pid, "SIGKILL");
  rmSync(dataDir, { recursive: true, force: true });
});

/** Runs `npm start` until its banner is printed; the output so far and the pid of the node process under npm. */
async function npmStart(): Promise<{ npm: ChildProcess; output: () => string; nodePid: number }> {
  const { KAFKA_BROKERS: _kafka, DATABASE_URL: _database, ...env } = process.env;
  const npm = spawn("npm", ["start"], {
    cwd: ROOT,
    env: { ...env, ORVADO_DATA_DIR: dataDir, PORT: "0", AUTH_PORT: "0", BILLING_PORT: "0", GENERATION_PORT: "0", ORVADO_ADMIN_EMAIL: "", ORVADO_ADMIN_PASSWORD: "" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  started.push(npm);
  let text = "";
  npm.stdout!.on("data", (chunk) => (text += chunk));
  npm.stderr!.on("data", (chunk) => (text += chunk));
  for (let attempt = 0; !text.includes("Ctrl-C stops"); attempt += 1) {
    if (npm.exitCode !== null || attempt > 1200) throw new Error(`npm start did not print its banner:\n${text}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const children = execFileSync("ps", ["-o", "pid=,args=", "--ppid", String(npm.pid)], { encoding: "utf8" }).trim().split("\n");
  expect(children).toHaveLength(1);
  // The bundle build-start.ts made; the build ran in a process of its own before.
  expect(children[0]).toMatch(/^\s*\d+ node .*services\/stack\/dist\/start\.mjs$/);
  const nodePid = Number(children[0]!.trim().split(" ")[0]);
  nodePids.push(nodePid);
  return { npm, output: () => text, nodePid };
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

async function stopsOn(signal: NodeJS.Signals, run: Awaited<ReturnType<typeof npmStart>>) {
  const exited = new Promise<number | null>((resolve) => run.npm.once("exit", (code) => resolve(code)));
  run.npm.kill(signal);
  expect(await exited).toBe(0);
  for (let attempt = 0; alive(run.nodePid) && attempt < 300; attempt += 1) await new Promise((resolve) => setTimeout(resolve, 100));
  expect(alive(run.nodePid)).toBe(false);
  expect(run.output()).toContain(`"signal":"${signal}","msg":"stopping: finishing work in flight"`);
}

describe("npm start under a process manager", { timeout: 180_000 }, () => {
  it("says where the generated admin password is, and stops node when npm is sent SIGTERM", async () => {
    const run = await npmStart();
    const password = /created admin account admin@orvado\.local with generated password (\S+)/.exec(run.output())?.[1];
    expect(password).toBeDefined();
    expect(run.output()).toContain("Admin admin@orvado.local: the generated password was printed once in the log above");
    await stopsOn("SIGTERM", run);
  });

  it("says the password was printed at the first start while it is unchanged, and stops node when npm is sent SIGINT", async () => {
    const run = await npmStart();
    expect(run.output()).not.toMatch(/created admin account admin@orvado\.local with generated password/);
    expect(run.output()).toContain("the generated password was printed once in the log of the first start");
    await stopsOn("SIGINT", run);
  });
});
