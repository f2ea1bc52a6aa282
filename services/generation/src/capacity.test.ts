import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { Tier } from "@orvado/proto";
import { createLogger } from "@orvado/core";
import { parseCatalog } from "./catalog.ts";
import { ChannelPool, type ChannelPoolOptions, type ChannelSlot, type SlotAnswer, type SlotHandOff } from "./capacity.ts";
import { openGenerationTestDb, twoChannelCatalog } from "./test-support.ts";
import { countingStatements } from "@orvado/testkit";

// Channel capacity and circuit breakers shared through the database (capacity.ts,
// migrations/005_channel_slots.sql). Two pools on one database stand for two
// generation replicas; the statements are the ones the service runs (PostgreSQL
// with TEST_DATABASE_URL, PGlite otherwise).

const catalog = twoChannelCatalog();
const flare = catalog.get("alpha-2.5-flare")!;
const beta = catalog.get("beta")!;
const logger = createLogger("test", "silent");

let database: Awaited<ReturnType<typeof openGenerationTestDb>>;
const pool = (options: Partial<ChannelPoolOptions> = {}, db = database.db) =>
  new ChannelPool(catalog, db, { failureThreshold: 2, cooldownMs: 60_000, readKey: () => "k", leaseTtlMs: 30_000, leaseRenewMs: 10_000, logger, ...options });

function slotOf(answer: SlotAnswer) {
  if (!answer.ok) throw new Error(`expected a slot, got ${answer.reason}`);
  return answer.slot;
}

/** Waits until the database's own clock has passed `at` (leases and cool-downs are timed there). */
async function untilDatabaseTime(at: Date): Promise<void> {
  for (;;) {
    const { rows } = await database.db.query<{ passed: boolean }>("SELECT clock_timestamp() > $1::timestamptz AS passed", [at]);
    if (rows[0]!.passed) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** One failure on flare's main channel (the pool's threshold is 1), then the cool-down waited out: the breaker is half-open. */
async function failUntilHalfOpen(pool: ChannelPool): Promise<void> {
  const failing = slotOf(await pool.take(flare, Tier.TIER_1K));
  failing.failed();
  await failing.release();
  await untilDatabaseTime(await openedUntil("alpha-2.5-flare/main"));
}

const openedUntil = async (key: string) =>
  (await database.db.query<{ opened_until: Date }>("SELECT opened_until FROM generation.channel_state WHERE channel_key = $1", [key])).rows[0]!.opened_until;

beforeAll(async () => {
  database = await openGenerationTestDb();
});
afterAll(async () => {
  await database?.close();
});
beforeEach(async () => {
  await database.db.query("DELETE FROM generation.channel_slots");
  await database.db.query("DELETE FROM generation.channel_state");
});

describe("channel capacity across replicas", () => {
  it("counts a channel's slots over every replica, by priority, then the next channel, then full; a release frees one", async () => {
    const [a, b] = [pool(), pool()];
    const first = slotOf(await a.take(flare, Tier.TIER_1K));
    const second = slotOf(await b.take(flare, Tier.TIER_1K));
    const third = slotOf(await a.take(flare, Tier.TIER_1K));
    expect([first.channel.name, second.channel.name, third.channel.name]).toEqual(["main", "main", "backup"]);
    expect(await b.take(flare, Tier.TIER_1K)).toEqual({ ok: false, reason: "full", retryAfterSeconds: 60 });
    for (const replica of [a, b]) {
      const health = await replica.health();
      expect([health.get("alpha-2.5-flare/main")!.inUse, health.get("alpha-2.5-flare/backup")!.inUse]).toEqual([2, 1]);
    }
    // Each process counts what it holds, for its metrics.
    expect([a.capacities.get("alpha-2.5-flare/main")!.inUse, b.capacities.get("alpha-2.5-flare/main")!.inUse]).toEqual([1, 1]);

    second.succeeded();
    await second.release();
    await second.release();
    expect(slotOf(await a.take(flare, Tier.TIER_1K)).channel.name).toBe("main");
    expect((await b.take(flare, Tier.TIER_1K)).ok).toBe(false);
  });

  it("counts the sandbox in each process: it renders on that process's CPU", async () => {
    const [a, b] = [pool(), pool()];
    slotOf(await a.take(beta, Tier.TIER_1K));
    slotOf(await b.take(beta, Tier.TIER_1K));
    expect((await a.take(beta, Tier.TIER_1K)).ok).toBe(false);
    expect((await database.db.query("SELECT 1 FROM generation.channel_slots")).rowCount).toBe(0);
  });

  it("frees the slots of a replica that stopped renewing once their lease expires, and keeps a renewed one", async () => {
    const dead = pool({ leaseTtlMs: 1000, leaseRenewMs: 1_000_000 });
    const alive = pool({ leaseTtlMs: 1000, leaseRenewMs: 100 });
    slotOf(await dead.take(flare, Tier.TIER_1K));
    slotOf(await alive.take(flare, Tier.TIER_1K));
    const { rows } = await database.db.query<{ holder: string; expires_at: Date }>("SELECT holder, expires_at FROM generation.channel_slots ORDER BY holder");
    const firstExpiry = new Date(Math.max(...rows.map((row) => row.expires_at.getTime())));
    await untilDatabaseTime(firstExpiry);
    const health = await alive.health();
    expect(health.get("alpha-2.5-flare/main")!.inUse).toBe(1);
    // The dead replica's slot is free again; the renewed one still counts, so main is full at 2.
    expect(slotOf(await alive.take(flare, Tier.TIER_1K)).channel.name).toBe("main");
    expect(slotOf(await alive.take(flare, Tier.TIER_1K)).channel.name).toBe("backup");
    const holders = (await database.db.query<{ holder: string }>("SELECT holder FROM generation.channel_slots WHERE channel_key = 'alpha-2.5-flare/main'")).rows.map((row) => row.holder);
    expect(holders).toEqual([alive.holder, alive.holder]);
  });
});

describe("the circuit breaker across replicas", () => {
  it("opens on consecutive failures from any replica: both skip the channel and report it open", async () => {
    const [a, b] = [pool(), pool()];
    for (const replica of [a, b]) {
      const slot = slotOf(await replica.take(flare, Tier.TIER_1K));
      expect(slot.channel.name).toBe("main");
      slot.failed();
      await slot.release();
    }
    for (const replica of [a, b]) {
      const health = await replica.health();
      expect(health.get("alpha-2.5-flare/main")).toMatchObject({ healthy: false, state: "open", inUse: 0, capacity: 2 });
      expect(health.get("alpha-2.5-flare/backup")).toMatchObject({ healthy: true, state: "closed" });
    }
    expect(slotOf(await b.take(flare, Tier.TIER_1K)).channel.name).toBe("backup");
  });

  it("counts consecutive failures: a success on any replica resets the count", async () => {
    const [a, b] = [pool(), pool()];
    const failing = slotOf(await a.take(flare, Tier.TIER_1K));
    failing.failed();
    await failing.release();
    const fine = slotOf(await b.take(flare, Tier.TIER_1K));
    fine.succeeded();
    await fine.release();
    const again = slotOf(await a.take(flare, Tier.TIER_1K));
    again.failed();
    await again.release();
    expect((await b.health()).get("alpha-2.5-flare/main")!.state).toBe("closed");
  });

  it("answers unhealthy with the seconds until the first half-open when every channel is open", async () => {
    const a = pool({ failureThreshold: 1, cooldownMs: 30_000 });
    for (const name of ["main", "backup"]) {
      const slot = slotOf(await a.take(flare, Tier.TIER_1K));
      expect(slot.channel.name).toBe(name);
      slot.failed();
      await slot.release();
    }
    const answer = await pool({ failureThreshold: 1 }).take(flare, Tier.TIER_1K);
    expect(answer).toMatchObject({ ok: false, reason: "unhealthy" });
    if (!answer.ok) expect(answer.retryAfterSeconds).toBeGreaterThanOrEqual(1);
    if (!answer.ok) expect(answer.retryAfterSeconds).toBeLessThanOrEqual(30);
  });

  it("half-opens after the cool-down for exactly one trial across replicas; its success closes the breaker", async () => {
    const [a, b] = [pool({ failureThreshold: 1, cooldownMs: 300 }), pool({ failureThreshold: 1, cooldownMs: 300 })];
    await failUntilHalfOpen(a);
    expect((await a.health()).get("alpha-2.5-flare/main")).toMatchObject({ state: "half-open", healthy: true });
    const trial = slotOf(await b.take(flare, Tier.TIER_1K));
    expect(trial.channel.name).toBe("main");
    // The trial is running on replica b: replica a goes to the backup.
    expect(slotOf(await a.take(flare, Tier.TIER_1K)).channel.name).toBe("backup");
    trial.succeeded();
    await trial.release();
    expect((await a.health()).get("alpha-2.5-flare/main")!.state).toBe("closed");
    expect(slotOf(await a.take(flare, Tier.TIER_1K)).channel.name).toBe("main");
  });

  it("reopens when the trial fails, and a cancelled trial frees the trial without a verdict", async () => {
    const a = pool({ failureThreshold: 1, cooldownMs: 300 });
    await failUntilHalfOpen(a);
    const cancelled = slotOf(await a.take(flare, Tier.TIER_1K));
    expect(cancelled.channel.name).toBe("main");
    await cancelled.release();
    expect((await a.health()).get("alpha-2.5-flare/main")!.state).toBe("half-open");
    const trial = slotOf(await a.take(flare, Tier.TIER_1K));
    expect(trial.channel.name).toBe("main");
    trial.failed();
    await trial.release();
    expect((await a.health()).get("alpha-2.5-flare/main")).toMatchObject({ state: "open", healthy: false });
  });

});

describe("jobs asking at once", () => {
  it("takes the slots of jobs asking at once in shared statements: each channel by priority up to its capacity, the rest refused as full", async () => {
    const { db: counting, statements } = countingStatements(database.db);
    const a = pool({}, counting);
    const answers = await Promise.all(Array.from({ length: 5 }, () => a.take(flare, Tier.TIER_1K)));
    const channels = answers.map((answer) => (answer.ok ? answer.slot.channel.name : answer.reason));
    expect(channels.sort()).toEqual(["backup", "full", "full", "main", "main"]);
    // The first take goes alone; the four that came while it ran share the next statement.
    expect(statements()).toBe(2);
    const health = await a.health();
    expect([health.get("alpha-2.5-flare/main")!.inUse, health.get("alpha-2.5-flare/backup")!.inUse]).toEqual([2, 1]);
  });

  it("takes one trial only on a half-open channel, even for jobs asking at once", async () => {
    const a = pool({ failureThreshold: 1, cooldownMs: 300 });
    await failUntilHalfOpen(a);
    const answers = await Promise.all(Array.from({ length: 3 }, () => a.take(flare, Tier.TIER_1K)));
    const channels = answers.map((answer) => (answer.ok ? answer.slot.channel.name : answer.reason));
    expect(channels.sort()).toEqual(["backup", "full", "main"]);
  });

  it("says a channel is likely free only after a take that left room, and not once it is nearly full or open", async () => {
    const roomy = parseCatalog({ models: [{ id: "m", family: "alpha", tiers: ["1K"], channels: [{ name: "c", provider: "openai", upstreamModel: "m", apiKeyEnv: "K", capacity: 4, priority: 1 }] }] });
    const model = roomy.get("m")!;
    const a = new ChannelPool(roomy, database.db, { failureThreshold: 1, cooldownMs: 60_000, readKey: () => "k", leaseTtlMs: 30_000, leaseRenewMs: 10_000, logger });
    const none = new Set<string>();
    // Nothing known yet: the first job asks for its slot first.
    expect(a.likelyFree(model, Tier.TIER_1K, none)).toBe(false);
    const first = slotOf(await a.take(model, Tier.TIER_1K));
    expect(a.likelyFree(model, Tier.TIER_1K, none)).toBe(true);
    slotOf(await a.take(model, Tier.TIER_1K));
    expect(a.likelyFree(model, Tier.TIER_1K, none)).toBe(true);
    slotOf(await a.take(model, Tier.TIER_1K));
    // One slot left: the next job could lose it to another, so it asks first.
    expect(a.likelyFree(model, Tier.TIER_1K, none)).toBe(false);
    first.failed();
    await first.release();
    expect(await a.take(model, Tier.TIER_1K)).toMatchObject({ ok: false, reason: "unhealthy" });
    expect(a.likelyFree(model, Tier.TIER_1K, none)).toBe(false);
    // Channels counted per process (the sandbox) gain nothing from asking at once.
    expect(a.likelyFree(beta, Tier.TIER_1K, none)).toBe(false);
  });

  it("hands a succeeded slot to the job's success statement: handedOff frees it here, and release() then does nothing", async () => {
    const { db: counting, statements } = countingStatements(database.db);
    const a = pool({}, counting);
    const slot = slotOf(await a.take(flare, Tier.TIER_1K));
    // Not before the call succeeded: a failed or cancelled call must teach the breaker through release().
    expect(slot.handOff()).toBeNull();
    slot.succeeded();
    const handOff = slot.handOff();
    expect(handOff).toMatchObject({ channelKey: "alpha-2.5-flare/main" });
    await database.db.query("DELETE FROM generation.channel_slots WHERE slot_id = $1", [handOff!.slotId]);
    slot.handedOff();
    expect(a.capacities.get("alpha-2.5-flare/main")!.inUse).toBe(0);
    const before = statements();
    await slot.release();
    expect(statements()).toBe(before);
    expect(slot.handOff()).toBeNull();
    expect((await a.health()).get("alpha-2.5-flare/main")!.inUse).toBe(0);
  });
});

describe("slots kept between jobs (kept-slots.ts)", () => {
  // A channel large enough to keep slots: 64 (kept-slots.ts keeps none under 16).
  const wide = parseCatalog({
    models: [
      {
        id: "wide",
        family: "beta",
        tiers: ["1K"],
        channels: [
          { name: "main", provider: "openai-compatible", upstreamModel: "m", baseUrl: "http://127.0.0.1:1/v1", capacity: 64, priority: 1 },
          { name: "backup", provider: "openai-compatible", upstreamModel: "m", baseUrl: "http://127.0.0.1:1/v1", capacity: 64, priority: 2 },
        ],
      },
    ],
  });
  const model = wide.get("wide")!;
  const widePool = (db = database.db, options: Partial<ChannelPoolOptions> = {}) =>
    new ChannelPool(wide, db, { failureThreshold: 2, cooldownMs: 60_000, readKey: () => "k", leaseTtlMs: 30_000, leaseRenewMs: 10_000, logger, ...options });
  const slotRows = async () =>
    (await database.db.query<{ slot_id: string }>("SELECT slot_id FROM generation.channel_slots WHERE channel_key = 'wide/main' ORDER BY slot_id")).rows.map((row) => row.slot_id);
  /** What a job's success does with its slot: the statement (job-store.ts) deletes it unless kept, then handedOff(). */
  async function succeed(slot: ChannelSlot): Promise<SlotHandOff> {
    slot.succeeded();
    const handOff = slot.handOff()!;
    if (!handOff.kept) await database.db.query("DELETE FROM generation.channel_slots WHERE slot_id = $1", [handOff.slotId]);
    slot.handedOff();
    return handOff;
  }

  it("hands the next job on the channel the slot of a call that succeeded, with no statement: the same row, counted once", async () => {
    const { db: counting, statements } = countingStatements(database.db);
    const a = widePool(counting);
    const first = slotOf(await a.take(model, Tier.TIER_1K));
    expect(statements()).toBe(1);
    const handOff = await succeed(first);
    expect(handOff.kept).toBe(true);
    expect(a.capacities.get("wide/main")!.inUse).toBe(0);
    // The next job may ask for its slot and its hold at once: the slot is here.
    expect(a.likelyFree(model, Tier.TIER_1K, new Set())).toBe(true);
    const second = slotOf(await a.take(model, Tier.TIER_1K));
    expect(statements()).toBe(1);
    expect(second.channel.name).toBe("main");
    expect(a.capacities.get("wide/main")!.inUse).toBe(1);
    expect(await slotRows()).toEqual([handOff.slotId]);
    // One kept slot serves one job: a job asking meanwhile takes its own.
    const third = slotOf(await a.take(model, Tier.TIER_1K));
    expect(statements()).toBe(2);
    expect((await slotRows()).length).toBe(2);
    // Every replica counts the kept slot as taken.
    expect((await widePool().health()).get("wide/main")!.inUse).toBe(2);
    await second.release();
    await third.release();
    expect(await slotRows()).toEqual([]);
    await a.close();
  });

  it("gives a kept slot back once its take is a second old, whether or not a job asks", async () => {
    const { db: counting, statements } = countingStatements(database.db);
    const a = widePool(counting);
    await succeed(slotOf(await a.take(model, Tier.TIER_1K)));
    expect((await slotRows()).length).toBe(1);
    const deadline = Date.now() + 5_000;
    while ((await slotRows()).length > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await slotRows()).toEqual([]);
    const before = statements();
    const next = slotOf(await a.take(model, Tier.TIER_1K));
    expect(statements()).toBe(before + 1);
    await next.release();
    await a.close();
  });

  it("gives back a channel's kept slots when a call on it fails, so the next job's take consults the breaker", async () => {
    const a = widePool(database.db, { failureThreshold: 1 });
    const [ok, failing] = [slotOf(await a.take(model, Tier.TIER_1K)), slotOf(await a.take(model, Tier.TIER_1K))];
    await succeed(ok);
    failing.failed();
    await failing.release();
    await a.close();
    expect(await slotRows()).toEqual([]);
    // The breaker is open: the job goes to the backup channel, not to a kept slot on main.
    const next = slotOf(await a.take(model, Tier.TIER_1K));
    expect(next.channel.name).toBe("backup");
    await next.release();
  });

  it("keeps none on a channel under 16 slots, when the take left less than a quarter of the channel free, or with keeping turned off", async () => {
    const small = slotOf(await pool().take(flare, Tier.TIER_1K));
    small.succeeded();
    expect(small.handOff()!.kept).toBe(false);
    await small.release();
    // Another replica holds 50 of main's 64: the take leaves 13 free.
    await database.db.query(
      "INSERT INTO generation.channel_slots (slot_id, channel_key, holder, expires_at) SELECT 'other-' || n, 'wide/main', 'other', now() + interval '1 minute' FROM generate_series(1, 50) AS n",
    );
    const a = widePool();
    const crowded = slotOf(await a.take(model, Tier.TIER_1K));
    expect(crowded.channel.name).toBe("main");
    expect((await succeed(crowded)).kept).toBe(false);
    expect(a.likelyFree(model, Tier.TIER_1K, new Set())).toBe(true);
    expect((await slotRows()).length).toBe(50);
    await a.close();
    // GENERATION_KEPT_SLOT_MAX_AGE_MS=0: none kept, however much room.
    await database.db.query("DELETE FROM generation.channel_slots");
    const off = widePool(database.db, { keptSlotMaxAgeMs: 0 });
    const roomy = slotOf(await off.take(model, Tier.TIER_1K));
    expect((await succeed(roomy)).kept).toBe(false);
    await off.close();
  });

  it("gives back every kept slot at close", async () => {
    const a = widePool();
    const slots = [slotOf(await a.take(model, Tier.TIER_1K)), slotOf(await a.take(model, Tier.TIER_1K))];
    for (const slot of slots) expect((await succeed(slot)).kept).toBe(true);
    expect((await slotRows()).length).toBe(2);
    await a.close();
    expect(await slotRows()).toEqual([]);
  });
});

