import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { BillingEvent } from "@orvado/proto";
import { recomputeFromLedger } from "./replay.ts";
import {
  BETA_1K_MICROS,
  USD,
  balanceOf,
  completedEvent,
  countByKind,
  deliver,
  expectProjectionMatchesLedger,
  failedEvent,
  fundedAccount,
  heldRequest,
  ledgerOf,
  startTestBilling,
  type RequestIds,
  type TestBilling,
} from "./test-support.ts";

// At-least-once, out-of-order delivery: a shuffled stream in which every event
// comes 2–3 times, plus stray `failed` events for requests that completed, must
// settle every request exactly once, to the outcome generation reported, and
// leave balances equal to a fold of the ledger.

const REQUESTS = 30;
const TOP_UP_MICROS = 10n * USD;

let billing: TestBilling;

beforeAll(async () => {
  billing = await startTestBilling();
});
afterAll(async () => {
  await billing?.close();
});

/** mulberry32: a small seeded generator, so a failing seed can be replayed exactly. */
function seededRandom(seed: number): (below: number) => number {
  let state = seed >>> 0;
  return (below) => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return Math.floor((((t ^ (t >>> 14)) >>> 0) / 4294967296) * below);
  };
}

function shuffle<T>(items: T[], random: (below: number) => number): T[] {
  const copy = [...items];
  for (let index = copy.length - 1; index > 0; index -= 1) {
    const other = random(index + 1);
    [copy[index], copy[other]] = [copy[other]!, copy[index]!];
  }
  return copy;
}

interface Planned {
  ids: RequestIds;
  imagesRequested: number;
  /** null: the job failed. */
  delivered: number | null;
}

describe("replaying a shuffled stream with duplicates", () => {
  it.each([7, 1234, 987_654])("settles every request exactly once and matches the ledger (seed %i)", async (seed) => {
    const random = seededRandom(seed);
    const accounts = [await fundedAccount(billing.client, TOP_UP_MICROS), await fundedAccount(billing.client, TOP_UP_MICROS)];

    const plan: Planned[] = [];
    for (let index = 0; index < REQUESTS; index += 1) {
      const imagesRequested = 1 + random(3);
      const ids = await heldRequest(billing.client, accounts[index % accounts.length]!, imagesRequested);
      const delivered = random(4) === 0 ? null : random(imagesRequested + 1);
      plan.push({ ids, imagesRequested, delivered });
    }
    // Make sure both stray-failed cases below have a completed request to pick.
    plan[0]!.delivered = plan[0]!.imagesRequested;
    plan[1]!.delivered = 1;

    const terminal = (planned: Planned): BillingEvent =>
      planned.delivered === null ? failedEvent(planned.ids) : completedEvent(planned.ids, planned.delivered);
    const copies = plan.flatMap((planned) => Array.from({ length: 2 + random(2) }, () => terminal(planned)));
    const stream = shuffle(copies, random);
    // A stray failed for a completed request, once before every copy of its completed, once after.
    stream.unshift(failedEvent(plan[0]!.ids, "stray duplicate"));
    stream.push(failedEvent(plan[1]!.ids, "stray duplicate"));

    // Published in a few batches, the way a relay would.
    for (let start = 0; start < stream.length; start += 17) await deliver(billing, stream.slice(start, start + 17));

    // Every request settled exactly once, to its planned outcome.
    for (const planned of plan) {
      const reserved = BETA_1K_MICROS * BigInt(planned.imagesRequested);
      const captured = BETA_1K_MICROS * BigInt(planned.delivered ?? 0);
      // The stray failed that came first released the whole hold; its completed then charged from the balance.
      const released = planned === plan[0] ? reserved : reserved - captured;
      const entries = await ledgerOf(billing.db, { requestId: planned.ids.requestId });
      const counts = countByKind(entries);
      const label = `${planned.ids.requestId}: n=${planned.imagesRequested} delivered=${planned.delivered} (seed ${seed})`;
      expect(counts, label).toEqual({ top_up: 0, reserve: 1, capture: captured > 0n ? 1 : 0, release: released > 0n ? 1 : 0, adjustment: 0 });
      for (const kind of ["reserve", "capture", "release"] as const) expect(counts[kind], label).toBeLessThanOrEqual(1);
      expect(entries.find((entry) => entry.kind === "capture")?.amountMicros ?? 0n, label).toBe(captured);
      expect(entries.find((entry) => entry.kind === "release")?.amountMicros ?? 0n, label).toBe(released);

      const record = await billing.db.query<{ settled_by: string | null; reserved_micros: bigint; captured_micros: bigint; released_micros: bigint }>(
        "SELECT settled_by, reserved_micros, captured_micros, released_micros FROM billing.cost_records WHERE request_id = $1",
        [planned.ids.requestId],
      );
      expect(record.rows[0], label).toEqual({
        settled_by: planned.delivered === null ? "failed" : "completed",
        reserved_micros: reserved,
        captured_micros: captured,
        released_micros: released,
      });
    }

    // Balances worked out by hand from the plan.
    for (const accountId of accounts) {
      const charged = plan
        .filter((planned) => planned.ids.accountId === accountId)
        .reduce((sum, planned) => sum + BETA_1K_MICROS * BigInt(planned.delivered ?? 0), 0n);
      expect(await balanceOf(billing.client, accountId), `${accountId} (seed ${seed})`).toEqual({
        balanceMicros: TOP_UP_MICROS - charged,
        heldMicros: 0n,
        availableMicros: TOP_UP_MICROS - charged,
      });
      expect(await recomputeFromLedger(billing.db, accountId)).toEqual({ balanceMicros: TOP_UP_MICROS - charged, heldMicros: 0n });
      await expectProjectionMatchesLedger(billing.db, accountId);

      // No cost record is left unsettled (holding money).
      const open = await billing.db.query<{ n: bigint }>(
        "SELECT count(*) AS n FROM billing.cost_records WHERE account_id = $1 AND settled_by IS NULL",
        [accountId],
      );
      expect(open.rows[0]!.n).toBe(0n);
    }
    const keyHeld = await billing.db.query<{ held: bigint }>(
      "SELECT COALESCE(sum(held_micros), 0)::bigint AS held FROM billing.key_spend WHERE account_id = ANY($1::text[])",
      [accounts],
    );
    expect(keyHeld.rows[0]!.held).toBe(0n);
  });
});

describe("ReplayLedger (orvado ledger replay)", () => {
  it("finds no difference after the shuffled stream, and reports a tampered projection", async () => {
    const clean = await billing.client.replayLedger({});
    expect(clean.differences).toEqual([]);
    expect(clean.entriesRead).toBeGreaterThan(0n);
    expect(clean.requestsChecked).toBeGreaterThanOrEqual(REQUESTS);

    // Projections are ordinary tables: drift one and replay must say exactly where.
    const accountId = await fundedAccount(billing.client, USD);
    await billing.db.query("UPDATE billing.balances SET balance_micros = balance_micros + 1 WHERE account_id = $1", [accountId]);
    const drifted = await billing.client.replayLedger({});
    expect(drifted.differences).toEqual([
      expect.objectContaining({ projection: "balance", id: accountId, field: "balance_micros", live: USD + 1n, replayed: USD }),
    ]);
    await billing.db.query("UPDATE billing.balances SET balance_micros = balance_micros - 1 WHERE account_id = $1", [accountId]);
  });
});
