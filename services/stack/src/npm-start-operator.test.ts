import { execFile, spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSimulator, type Simulator } from "@orvado/simulators";

// `npm start` as an operator runs it (a real process, its own ports, PGlite in a temporary data
// dir) with a models file of an OpenAI channel (the simulator on 127.0.0.1) and a sandbox one:
// the banner says which channels serve each model, and `npx orvado` (bin/orvado.js as a process,
// from another directory, with no address in its environment) finds the services through the
// addresses file npm start leaves in the data dir, and calls them over RPC. Stopped with SIGTERM,
// the stack removes the file. Started again with a model whose tier has no price, it refuses,
// printing the model, the tier and the commands that fix it.

const ROOT = new URL("../../../", import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), "orvado-npm-start-operator-"));
const dataDir = join(dir, "data");
const elsewhere = mkdtempSync(join(tmpdir(), "orvado-cli-cwd-"));
let openai: Simulator;
let npm: ChildProcess;
let output = "";

function npmStart(modelsFile: string): ChildProcess {
  const { KAFKA_BROKERS: _kafka, DATABASE_URL: _database, ...env } = process.env;
  return spawn("npm", ["start"], {
    cwd: ROOT,
    env: {
      ...env,
      ORVADO_DATA_DIR: dataDir,
      ORVADO_MODELS_FILE: modelsFile,
      SIM_OPENAI_KEY: "sk-sim",
      PORT: "0",
      AUTH_PORT: "0",
      BILLING_PORT: "0",
      GENERATION_PORT: "0",
      ORVADO_ADMIN_EMAIL: "",
      ORVADO_ADMIN_PASSWORD: "",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
}

beforeAll(async () => {
  openai = await startSimulator("openai", { behaviour: { apiKey: "sk-sim" } });
  const models = {
    models: [
      {
        id: "alpha-2.5-flare",
        aliases: ["gpt-image-1"],
        family: "alpha",
        tiers: ["1K"],
        channels: [
          { name: "openai-main", provider: "openai", upstreamModel: "gpt-image-1", baseUrl: openai.baseUrl, apiKeyEnv: "SIM_OPENAI_KEY", capacity: 4 },
          { name: "local", provider: "sandbox", capacity: 4 },
        ],
      },
      { id: "beta", family: "beta", tiers: ["1K"], channels: [{ name: "sandbox", provider: "sandbox", capacity: 4 }] },
    ],
  };
  writeFileSync(join(dir, "models.json"), JSON.stringify(models));
  npm = npmStart(join(dir, "models.json"));
  npm.stdout!.on("data", (chunk) => (output += chunk));
  npm.stderr!.on("data", (chunk) => (output += chunk));
  for (let attempt = 0; !output.includes("Ctrl-C stops"); attempt += 1) {
    if (npm.exitCode !== null || attempt > 1200) throw new Error(`npm start did not print its banner:\n${output}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}, 180_000);

afterAll(async () => {
  if (npm && npm.exitCode === null && npm.signalCode === null) npm.kill("SIGKILL");
  await openai?.close();
  for (const path of [dir, elsewhere]) rmSync(path, { recursive: true, force: true });
});

/** bin/orvado.js as an operator runs it: from another directory, the data dir its only setting. */
async function orvado(...args: string[]) {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [join(ROOT, "tools/cli/bin/orvado.js"), ...args], {
      cwd: elsewhere,
      env: { PATH: process.env.PATH ?? "", ORVADO_DATA_DIR: dataDir },
    });
    return { code: 0, stdout, stderr, json: JSON.parse(stdout) };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr, json: null };
  }
}

describe("npm start for the operator (a real process)", { timeout: 120_000 }, () => {
  it("describes the configured channels in its banner", () => {
    expect(output).toContain("Models and their channels (ORVADO_MODELS_FILE; tried in this order):");
    expect(output).toMatch(/alpha-2\.5-flare\s+→ openai-main \(openai\), local \(sandbox\) \(also gpt-image-1\)/);
    expect(output).toMatch(/beta\s+→ sandbox \(sandbox\)/);
    expect(output).not.toContain("Models are served by the SANDBOX renderer");
  });

  it("leaves the addresses where npx orvado finds them without flags, with no secret in them", async () => {
    const file = JSON.parse(readFileSync(join(dataDir, "addresses.json"), "utf8"));
    expect(Object.keys(file).sort()).toEqual(["auth", "billing", "edge", "generation", "pid", "startedAt"]);
    expect(JSON.stringify(file)).not.toContain(JSON.parse(readFileSync(join(dataDir, "secrets.json"), "utf8")).internalSecret);
    expect(output).toContain(`${file.edge}/v1`);

    const accounts = await orvado("accounts", "list");
    expect(accounts.stderr).toBe("");
    expect(accounts.json.accounts).toContainEqual(expect.objectContaining({ email: "admin@orvado.local", role: "admin" }));
    const channels = await orvado("channels", "list");
    expect(channels.json.channels.map((row: { model: string; channel: string; state: string }) => [row.model, row.channel, row.state])).toEqual([
      ["alpha-2.5-flare", "openai-main", "closed"],
      ["alpha-2.5-flare", "local", "closed"],
      ["beta", "sandbox", "closed"],
    ]);
  });

  it("removes the file when it stops", async () => {
    const exited = new Promise<number | null>((resolve) => npm.once("exit", (code) => resolve(code)));
    npm.kill("SIGTERM");
    expect(await exited).toBe(0);
    expect(existsSync(join(dataDir, "addresses.json"))).toBe(false);
  });

  it("refuses to start with a tier that has no price, saying which and how to price it", async () => {
    const unpriced = join(dir, "unpriced.json");
    writeFileSync(unpriced, JSON.stringify({ models: [{ id: "flux-local", family: "beta", tiers: ["1K"], channels: [{ name: "gpu", provider: "sandbox", capacity: 1 }] }] }));
    const refused = npmStart(unpriced);
    let stderr = "";
    refused.stderr!.on("data", (chunk) => (stderr += chunk));
    const code = await new Promise<number | null>((resolve) => refused.once("exit", (exitCode) => resolve(exitCode)));
    expect(code).toBe(1);
    expect(stderr).toContain("orvado: the start was refused:");
    expect(stderr).toContain('model "flux-local" offers the 1K tier, which has no price');
    expect(stderr).toContain("npx orvado prices set --create --model flux-local --tier 1K --usd <USD per image>");
    expect(stderr).toContain('"flux-local": { "1K": "<USD per image>" }');
    expect(existsSync(join(dataDir, "addresses.json"))).toBe(false);
  });
});
