import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { Tier } from "@orvado/proto";
import { createLogger } from "@orvado/core";
import { ChannelPool, type ChannelPoolOptions, type SlotAnswer } from "./capacity.ts";
import { openGenerationTestDb, twoChannelCatalog } from "./test-support.ts";
import { countingStatements } from "@orvado/testkit";
import { Writable } from "node:stream";
import { pino } from "pino";
import { lastChannelFailures } from "./channel-slots.ts";

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

/** A logger whose warnings are kept, each as its parsed JSON line. */
function recordingLogger() {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      lines.push(JSON.parse(String(chunk)));
      done();
    },
  });
  return { logger: pino({ level: "warn" }, sink), openings: () => lines.filter((line) => String(line.msg).startsWith("channel breaker opened")) };
}

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
  failing.failed("HTTP 502 from the upstream");
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
      slot.failed("HTTP 502 from the upstream");
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
    failing.failed("HTTP 502 from the upstream");
    await failing.release();
    const fine = slotOf(await b.take(flare, Tier.TIER_1K));
    fine.succeeded();
    await fine.release();
    const again = slotOf(await a.take(flare, Tier.TIER_1K));
    again.failed("HTTP 502 from the upstream");
    await again.release();
    expect((await b.health()).get("alpha-2.5-flare/main")!.state).toBe("closed");
  });

  it("answers unhealthy with the seconds until the first half-open when every channel is open", async () => {
    const a = pool({ failureThreshold: 1, cooldownMs: 30_000 });
    for (const name of ["main", "backup"]) {
      const slot = slotOf(await a.take(flare, Tier.TIER_1K));
      expect(slot.channel.name).toBe(name);
      slot.failed("HTTP 502 from the upstream");
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
    trial.failed("HTTP 502 from the upstream");
    await trial.release();
    expect((await a.health()).get("alpha-2.5-flare/main")).toMatchObject({ state: "open", healthy: false });
  });

  it("keeps a failed call's cause as the channel's last failure, in the release that counts it", async () => {
    const a = pool();
    const slot = slotOf(await a.take(flare, Tier.TIER_1K));
    slot.failed("HTTP 503 from the upstream: overloaded");
    slot.failed("a later cause is not the verdict");
    await slot.release();
    const failures = await lastChannelFailures(database.db, ["alpha-2.5-flare/main"]);
    expect(failures.get("alpha-2.5-flare/main")?.detail).toBe("HTTP 503 from the upstream: overloaded");
    const row = await database.db.query<{ consecutive_failures: number }>("SELECT consecutive_failures FROM generation.channel_state WHERE channel_key = 'alpha-2.5-flare/main'");
    expect(row.rows[0]!.consecutive_failures).toBe(1);
  });

  it("logs each opening once, from the replica whose failure opened it, and again when a failed trial reopens it", async () => {
    const [logA, logB] = [recordingLogger(), recordingLogger()];
    const a = pool({ failureThreshold: 2, cooldownMs: 300, logger: logA.logger });
    const b = pool({ failureThreshold: 2, cooldownMs: 300, logger: logB.logger });
    // Three calls running when the channel fails: the second failure opens it, the third finds it open.
    const calls = [slotOf(await a.take(flare, Tier.TIER_1K)), slotOf(await b.take(flare, Tier.TIER_1K))];
    const late = slotOf(await a.take(flare, Tier.TIER_1K));
    calls[0]!.failed("HTTP 502 from the upstream");
    await calls[0]!.release();
    expect(logA.openings()).toEqual([]);
    calls[1]!.failed("HTTP 500 from the upstream");
    await calls[1]!.release();
    late.failed("HTTP 502 from the upstream");
    await late.release();
    expect(logA.openings()).toEqual([]);
    expect(logB.openings()).toEqual([expect.objectContaining({ level: 40, channel: "alpha-2.5-flare/main", failureThreshold: 2, cooldownMs: 300, detail: "HTTP 500 from the upstream" })]);
    await untilDatabaseTime(await openedUntil("alpha-2.5-flare/main"));
    const trial = slotOf(await a.take(flare, Tier.TIER_1K));
    expect(trial.channel.name).toBe("main");
    trial.failed("connect ECONNREFUSED");
    await trial.release();
    expect(logA.openings()).toEqual([expect.objectContaining({ channel: "alpha-2.5-flare/main", detail: "connect ECONNREFUSED" })]);
    expect(logB.openings()).toHaveLength(1);
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

describe("a slot per job", () => {
  it("takes a slot for each job and frees it when the job ends: the next job takes its own, in its own statement", async () => {
    const { db: counting, statements } = countingStatements(database.db);
    const a = pool({}, counting);
    const first = slotOf(await a.take(flare, Tier.TIER_1K));
    first.succeeded();
    await first.release();
    expect((await a.health()).get("alpha-2.5-flare/main")!.inUse).toBe(0);
    const before = statements();
    const second = slotOf(await a.take(flare, Tier.TIER_1K));
    expect(statements()).toBe(before + 1);
    expect(second.channel.name).toBe("main");
    expect((await pool().health()).get("alpha-2.5-flare/main")!.inUse).toBe(1);
    await second.release();
    expect((await a.health()).get("alpha-2.5-flare/main")!.inUse).toBe(0);
  });
});
