import { readFile } from "node:fs/promises";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { AuthService, BillingService, GenerationService } from "@orvado/proto";
import { internalClient } from "@orvado/rpc";
import { openDb, type Db } from "@orvado/db";
import { startSimulator, type Simulator } from "@orvado/simulators";
import { freshDatabase, type FreshDatabase } from "@orvado/testkit";
import { ProcessStack, type ProcessName } from "./process-stack.ts";
import { SERVICE_NODE_FLAGS } from "./node-flags.ts";
import { signedIn } from "./console-browser.ts";

// Issue H items 3 and 4 over real HTTP and gRPC, with the services as separate
// processes on one PostgreSQL (the Postgres event log): two generation replicas,
// each behind its own edge (edge → generation, edge#2 → generation#2), share a
// channel's capacity and its circuit breaker through the database. Upstreams are
// OpenAI protocol simulators on 127.0.0.1 that count the calls open at once.

const LEASE_TTL_MS = 8000;
const FLARE_1K_MICROS = 40_000n; // config/prices.json
const SIM_KEY = "sk-capacity-test";

let database: FreshDatabase;
let db: Db;
let stack: ProcessStack;
let dataDir: string;
let quota: Simulator; // alpha-2.5-flare's only channel, capacity 2
let flaky: Simulator; // beta's first channel, whose breaker opens
let steady: Simulator; // beta's second channel
let roomy: Simulator; // alpha-2.5-sunburst's only channel, capacity 3
let wide: Simulator; // beta-2-lite's only channel, capacity 64
let edges: [string, string];
let generations: [ReturnType<typeof generationClient>, ReturnType<typeof generationClient>];
const warnings: string[] = [];

const generationClient = (url: string) => internalClient(GenerationService, url, stack.secret, { transport: "http2" });

function modelsFile(): string {
  const channel = (name: string, sim: Simulator, capacity: number, priority: number) => ({
    name,
    provider: "openai",
    upstreamModel: "gpt-image-1",
    baseUrl: sim.baseUrl,
    apiKeyEnv: "SIM_OPENAI_KEY",
    capacity,
    priority,
  });
  const path = join(dataDir, "models.json");
  const models = [
    { id: "alpha-2.5-flare", family: "alpha", tiers: ["1K"], channels: [channel("quota", quota, 2, 1)] },
    { id: "beta", family: "beta", tiers: ["1K"], channels: [channel("flaky", flaky, 8, 1), channel("steady", steady, 8, 2)] },
    { id: "alpha-2.5-sunburst", family: "alpha", tiers: ["1K"], channels: [channel("roomy", roomy, 3, 1)] },
    { id: "beta-2-lite", family: "beta", tiers: ["1K"], channels: [channel("wide", wide, 64, 1)] },
  ];
  writeFileSync(path, JSON.stringify({ models }));
  return path;
}

async function newFundedKey(usd: bigint): Promise<{ accountId: string; key: string }> {
  const auth = internalClient(AuthService, stack.url("auth"), stack.secret);
  const billing = internalClient(BillingService, stack.url("billing"), stack.secret);
  const { account } = await auth.createAccount({ email: `cap-${Math.random().toString(36).slice(2)}@example.test`, password: "capacity-password-1" });
  await billing.topUp({ accountId: account!.accountId, amountMicros: usd * 1_000_000n, note: "capacity test" });
  return { accountId: account!.accountId, key: (await auth.createKey({ accountId: account!.accountId, name: "capacity" })).secret };
}

const balanceOf = async (accountId: string) => (await internalClient(BillingService, stack.url("billing"), stack.secret).getBalance({ accountId })).balance!;

const generate = (edge: string, key: string, model: string, prompt: string) =>
  fetch(`${edge}/v1/images/generations`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
    body: JSON.stringify({ model, prompt, response_format: "b64_json" }),
  });

// biome-ignore lint/suspicious/noExplicitAny: the test reads fields of a JSON answer whose shape it asserts
const json = (response: Response): Promise<any> => response.json();

async function until(condition: () => boolean | Promise<boolean>, what: string): Promise<void> {
  for (let attempt = 0; attempt < 1200; attempt += 1) {
    if (await condition()) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`gave up waiting for ${what}`);
}

async function settledStatus(edge: string, requestId: string): Promise<string> {
  let status = "pending";
  await until(async () => {
    status = (await json(await fetch(`${edge}/api/cost/request/${requestId}`))).status;
    return status !== "pending";
  }, `the cost of ${requestId}`);
  return status;
}

const databaseNow = async () => (await db.query<{ now: Date }>("SELECT clock_timestamp() AS now")).rows[0]!.now;

beforeAll(async () => {
  const behaviour = { behaviour: { apiKey: SIM_KEY } };
  [quota, flaky, steady, roomy, wide] = (await Promise.all([1, 2, 3, 4, 5].map(() => startSimulator("openai", behaviour)))) as [Simulator, Simulator, Simulator, Simulator, Simulator];
  database = await freshDatabase(process.env.TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres");
  dataDir = mkdtempSync(join(tmpdir(), "orvado-capacity-"));
  stack = await ProcessStack.start({
    databaseUrl: database.url,
    dataDir,
    env: {
      ORVADO_MODELS_FILE: modelsFile(),
      SIM_OPENAI_KEY: SIM_KEY,
      GENERATION_ALLOW_PRIVATE_UPSTREAMS: "1",
      GENERATION_CHANNEL_LEASE_TTL_MS: String(LEASE_TTL_MS),
      GENERATION_BREAKER_FAILURES: "2",
      GENERATION_BREAKER_COOLDOWN_MS: "600000",
    },
    onLog: (service, line) => {
      if (warnings.length < 20) warnings.push(`${service}: ${line.slice(0, 300)}`);
    },
  });
  const second = await stack.startReplica("generation", 2);
  const secondEdge = await stack.startReplica("edge", 2, { ORVADO_GENERATION_URL: stack.urlOf(second) });
  edges = [stack.url("edge"), stack.urlOf(secondEdge)];
  generations = [generationClient(stack.url("generation")), generationClient(stack.urlOf(second))];
  db = await openDb(database.url);
}, 240_000);

afterAll(async () => {
  await stack?.stop();
  await db?.close();
  await database?.drop();
  await Promise.all([quota, flaky, steady, roomy, wide].map((sim) => sim?.close()));
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

beforeEach(() => {
  for (const sim of [quota, flaky, steady, roomy, wide]) sim.reset();
});

const quotaInUse = async (client: (typeof generations)[number]) =>
  (await client.listModels({})).models.find((model) => model.id === "alpha-2.5-flare")!.channels[0]!.inUse;

describe("the service processes (process stack, as deploy/Dockerfile runs them)", () => {
  it("run with their own Node flags (node-flags.ts)", async () => {
    for (const [name, pid] of Object.entries(stack.pids())) {
      const service = name.split("#")[0] as keyof typeof SERVICE_NODE_FLAGS;
      const argv = (await readFile(`/proc/${pid}/cmdline`, "utf8")).split("\0");
      expect(argv.slice(1, 1 + SERVICE_NODE_FLAGS[service].length), name).toEqual([...SERVICE_NODE_FLAGS[service]]);
    }
  });
});

describe("a channel's capacity across two generation replicas (processes, one PostgreSQL)", () => {
  it("runs at most capacity (2) upstream calls at once for 10 parallel jobs over both replicas; the rest are 503 no_capacity, charged nothing", async () => {
    const { accountId, key } = await newFundedKey(5n);
    // Slow enough that all ten reach the channel while the first two still run.
    const answers = Array.from({ length: 10 }, (_, index) => generate(edges[index % 2]!, key, "alpha-2.5-flare", `job ${index} [sim:delay=10000]`));
    await until(() => quota.inFlight === 2, "two upstream calls");
    // Both replicas read the same count while the two run.
    await until(async () => (await quotaInUse(generations[0])) === 2, "replica 1 to see two slots in use");
    expect(await quotaInUse(generations[1])).toBe(2);
    const responses = await Promise.all(answers);

    expect(quota.stats.peakInFlight, warnings.join("\n")).toBe(2);
    const ok = responses.filter((response) => response.status === 200);
    const refused = responses.filter((response) => response.status !== 200);
    expect(ok).toHaveLength(2);
    expect(quota.count("generate")).toBe(2);
    for (const response of refused) {
      expect(response.status).toBe(503);
      expect(response.headers.get("retry-after")).toBe("60");
      expect((await json(response)).error).toMatchObject({ type: "gateway_error", code: "no_capacity" });
      // A request refused for capacity has no cost record at all: nothing held, nothing charged.
      expect((await fetch(`${edges[0]}/api/cost/request/${response.headers.get("x-gateway-request-id")}`)).status).toBe(404);
    }
    // Each edge sent five: each replica refused at least three.
    for (const edge of edges) expect(refused.filter((response) => response.url.startsWith(edge)).length).toBeGreaterThanOrEqual(3);
    for (const response of ok) expect(await settledStatus(edges[0], response.headers.get("x-gateway-request-id")!)).toBe("charged");
    const balance = await balanceOf(accountId);
    expect([balance.balanceMicros, balance.heldMicros]).toEqual([5_000_000n - 2n * FLARE_1K_MICROS, 0n]);
    expect(await quotaInUse(generations[1])).toBe(0);
  });
});

// docs/architecture.md#one-request-step-by-step: the slot comes before the billing hold. Replica 2
// fills the channel behind replica 1's back; replica 1's next job finds no slot: 503 no_capacity,
// with no hold made and nothing recorded.
describe("a job refused for capacity on a channel another replica filled", () => {
  it("answers 503 no_capacity, holds and charges nothing", async () => {
    const { accountId, key } = await newFundedKey(5n);
    const held = Array.from({ length: 3 }, (_, index) => generate(edges[1], key, "alpha-2.5-sunburst", `held ${index} [sim:delay=4000]`));
    await until(() => roomy.inFlight === 3, "replica 2 to fill the channel");
    const late = await generate(edges[0], key, "alpha-2.5-sunburst", "one too many");
    expect(late.status).toBe(503);
    expect((await json(late)).error).toMatchObject({ type: "gateway_error", code: "no_capacity" });
    const requestId = late.headers.get("x-gateway-request-id")!;
    expect((await db.query("SELECT 1 FROM billing.cost_records WHERE request_id = $1", [requestId])).rowCount).toBe(0);
    expect((await db.query("SELECT 1 FROM generation.jobs WHERE request_id = $1", [requestId])).rowCount).toBe(0);
    expect((await Promise.all(held)).map((response) => response.status)).toEqual([200, 200, 200]);
    for (const response of await Promise.all(held)) await settledStatus(edges[0], response.headers.get("x-gateway-request-id")!);
    const balance = await balanceOf(accountId);
    expect([balance.balanceMicros, balance.heldMicros]).toEqual([5_000_000n - 3n * 60_000n, 0n]);
    expect(roomy.count("generate")).toBe(3);
  });
});

// docs/providers.md#capacity-and-the-circuit-breaker: a job takes its slot when it starts and gives it
// back when it ends; while it runs, every replica counts it.
describe("a slot per job (a channel of 64)", () => {
  it("is taken by replica 1's job, counted on replica 2 while it runs, and gone by the answer; the next job takes its own", async () => {
    const { key } = await newFundedKey(5n);
    const wideSlots = async () =>
      (await db.query<{ slot_id: string; holder: string }>("SELECT slot_id, holder FROM generation.channel_slots WHERE channel_key = 'beta-2-lite/wide' ORDER BY slot_id")).rows;
    const wideInUse = async (client: (typeof generations)[number]) => (await client.listModels({})).models.find((model) => model.id === "beta-2-lite")!.channels[0]!.inUse;
    const first = generate(edges[0], key, "beta-2-lite", "first [sim:delay=3000]");
    await until(() => wide.inFlight === 1, "replica 1's job to reach the upstream");
    const taken = await wideSlots();
    expect(taken).toHaveLength(1);
    expect(taken[0]!.holder.split("/")[1]).toBe(String(stack.pids().generation));
    expect(await wideInUse(generations[1])).toBe(1);
    expect((await first).status).toBe(200);
    // Given back before the answer.
    expect(await wideSlots()).toEqual([]);
    expect(await wideInUse(generations[1])).toBe(0);
    const second = generate(edges[0], key, "beta-2-lite", "second [sim:delay=3000]");
    await until(() => wide.inFlight === 1, "replica 1's next job to reach the upstream");
    const next = await wideSlots();
    expect(next).toHaveLength(1);
    expect(next[0]!.slot_id).not.toBe(taken[0]!.slot_id);
    expect((await second).status).toBe(200);
    expect(await wideSlots()).toEqual([]);
    expect(wide.count("generate")).toBe(2);
  });
});

// Decision (docs/providers.md): breaker state is shared, in the same row that counts the channel's slots.
describe("circuit breakers and channel health across two generation replicas", () => {
  it("opens a breaker on failures seen by replica 1; replica 2 skips the channel, and /v1/models, ListModels and the admin console agree on both", async () => {
    flaky.behave({ mode: "fail" });
    const { key } = await newFundedKey(5n);
    // GENERATION_BREAKER_FAILURES is 2: two failures in a row open it (each job still succeeds on the backup).
    for (let i = 0; i < 2; i += 1) expect((await generate(edges[0], key, "beta", `try ${i}`)).status).toBe(200);
    expect([flaky.count("generate"), steady.count("generate")]).toEqual([2, 2]);

    const publicView = [
      { name: "flaky", provider: "openai", healthy: false },
      { name: "steady", provider: "openai", healthy: true },
    ];
    for (const edge of edges) {
      const models = await json(await fetch(`${edge}/v1/models`, { headers: { authorization: `Bearer ${key}` } }));
      expect(models.data.find((model: { id: string }) => model.id === "beta").channels).toEqual(publicView);
      const admin = await signedIn(edge, "admin@example.test", "admin-password-1");
      const page = await admin.call("GET", "/admin/models");
      expect(page.status).toBe(200);
      expect(page.body.models.find((model: { id: string }) => model.id === "beta").channels).toEqual(publicView);
    }
    for (const client of generations) {
      const beta = (await client.listModels({})).models.find((model) => model.id === "beta")!;
      expect(beta.channels.map(({ name, healthy, state, inUse, capacity }) => ({ name, healthy, state, inUse, capacity }))).toEqual([
        { name: "flaky", healthy: false, state: "open", inUse: 0, capacity: 8 },
        { name: "steady", healthy: true, state: "closed", inUse: 0, capacity: 8 },
      ]);
    }
    // Replica 2 never saw the channel fail, yet skips it.
    expect((await generate(edges[1], key, "beta", "skip the broken one")).status).toBe(200);
    expect([flaky.count("generate"), steady.count("generate")]).toEqual([2, 3]);
  });
});

describe("a killed generation replica's slots", () => {
  it("frees the slots of a replica killed with -9 within the lease TTL; until then they still count", async () => {
    const { key } = await newFundedKey(5n);
    const doomed: ProcessName = "generation#2";
    const held = [0, 1].map((index) => generate(edges[1], key, "alpha-2.5-flare", `held ${index} [sim:delay=600000]`).catch(() => null));
    await until(() => quota.inFlight === 2, "replica 2 to hold both slots");
    const slots = await db.query<{ slot_id: string; holder: string }>("SELECT slot_id, holder FROM generation.channel_slots WHERE channel_key = 'alpha-2.5-flare/quota'");
    const pid = stack.pids()[doomed]!;
    expect(slots.rows.map((row) => row.holder.split("/")[1])).toEqual([String(pid), String(pid)]);

    await stack.kill(doomed);
    const killedAt = await databaseNow();
    await Promise.all(held);
    // The dead replica's leases still hold the channel's two slots: replica 1 is refused.
    const early = await generate(edges[0], key, "alpha-2.5-flare", "too early");
    expect(early.status).toBe(503);
    expect((await json(early)).error.code).toBe("no_capacity");

    // The bound: no lease of the dead replica lasts longer than the TTL after the kill.
    const leases = await db.query<{ expires_at: Date }>("SELECT expires_at FROM generation.channel_slots WHERE slot_id = ANY($1::text[])", [slots.rows.map((row) => row.slot_id)]);
    expect(leases.rows).toHaveLength(2);
    const lastExpiry = Math.max(...leases.rows.map((row) => row.expires_at.getTime()));
    expect(lastExpiry).toBeLessThanOrEqual(killedAt.getTime() + LEASE_TTL_MS);
    await until(async () => (await databaseNow()).getTime() > lastExpiry, "the dead replica's leases to expire");

    // Once expired the slots are free to the surviving replica: two jobs run at once again.
    const after = await Promise.all([0, 1].map((index) => generate(edges[0], key, "alpha-2.5-flare", `after ${index} [sim:delay=500]`)));
    expect(after.map((response) => response.status)).toEqual([200, 200]);
    expect((await db.query("SELECT 1 FROM generation.channel_slots WHERE slot_id = ANY($1::text[])", [slots.rows.map((row) => row.slot_id)])).rowCount).toBe(0);
  });
});
