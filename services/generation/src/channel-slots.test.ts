import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { renewSharedSlots, takeSharedSlots } from "./channel-slots.ts";
import { openGenerationTestDb } from "./test-support.ts";

// The lease statements of channel-slots.ts on a real PostgreSQL (a fresh database, generation's migrations).

let test: Awaited<ReturnType<typeof openGenerationTestDb>>;
beforeAll(async () => {
  test = await openGenerationTestDb();
});
afterAll(() => test?.close());

const expiry = async (slotId: string) =>
  (await test.db.query<{ expires_at: Date }>("SELECT expires_at FROM generation.channel_slots WHERE slot_id = $1", [slotId])).rows[0]!.expires_at.getTime();

describe("renewing a process's slot leases", () => {
  it("renews the slots no other statement holds and skips, without waiting, one another transaction has locked", async () => {
    const channels = [{ key: "beta/one", capacity: 10 }];
    await takeSharedSlots(test.db, { slotIds: ["slot-free", "slot-locked"], holder: "test", channels, failureThreshold: 5, leaseTtlMs: 60_000 });
    const lockedBefore = await expiry("slot-locked");
    const freeBefore = await expiry("slot-free");
    let renewed = -1;
    await test.db.tx(async (q) => {
      await q.query("SELECT 1 FROM generation.channel_slots WHERE slot_id = 'slot-locked' FOR UPDATE");
      // Were the locked row waited for, this would wait for this transaction, which waits for it.
      renewed = await renewSharedSlots(test.db, ["slot-free", "slot-locked"], 120_000);
    });
    expect(renewed).toBe(1);
    expect(await expiry("slot-free")).toBeGreaterThan(freeBefore);
    expect(await expiry("slot-locked")).toBe(lockedBefore);
    // Unlocked, it is renewed by the next round.
    expect(await renewSharedSlots(test.db, ["slot-free", "slot-locked"], 120_000)).toBe(2);
  });
});
