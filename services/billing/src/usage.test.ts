import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CostStatus } from "@orvado/proto";
import { Code, ConnectError } from "@orvado/rpc";
import { BETA_1K_MICROS, USD, betaReserve, completedEvent, deliver, failedEvent, fundedAccount, startTestBilling, uniqueId, type TestBilling } from "./test-support.ts";

// What the console shows an account owner: pages of their requests, spend per
// day and per key, scoped to their account and nobody else's.

let billing: TestBilling;
let accountId: string;
let otherAccountId: string;
const keyA = uniqueId("key");
const keyB = uniqueId("key");
const requestIds: string[] = [];

beforeAll(async () => {
  billing = await startTestBilling();
  accountId = await fundedAccount(billing.client, 10n * USD);
  otherAccountId = await fundedAccount(billing.client, 10n * USD);
  const events = [];
  for (let index = 0; index < 7; index++) {
    const ids = { requestId: uniqueId("req"), accountId, keyId: index < 5 ? keyA : keyB };
    expect((await billing.client.reserve(betaReserve(ids))).result.case).toBe("hold");
    requestIds.push(ids.requestId);
    // Requests 0..4 complete, 5 fails, 6 stays pending.
    if (index < 5) events.push(completedEvent(ids, 1));
    if (index === 5) events.push(failedEvent(ids));
  }
  const foreign = { requestId: uniqueId("req"), accountId: otherAccountId, keyId: uniqueId("key") };
  await billing.client.reserve(betaReserve(foreign));
  await deliver(billing, [...events, completedEvent(foreign, 1)]);
});
afterAll(async () => {
  await billing?.close();
});

describe("ListCostRecords", () => {
  it("pages through the account's own requests newest first, with no gaps or repeats", async () => {
    const seen: string[] = [];
    let cursor = "";
    do {
      const page = await billing.client.listCostRecords({ accountId, limit: 3, cursor });
      expect(page.records.length).toBeLessThanOrEqual(3);
      seen.push(...page.records.map((record) => record.requestId));
      cursor = page.nextCursor;
    } while (cursor);
    expect(seen).toEqual([...requestIds].reverse());
  });

  it("carries status, amount and key id", async () => {
    const { records } = await billing.client.listCostRecords({ accountId });
    const byId = new Map(records.map((record) => [record.requestId, record]));
    expect(byId.get(requestIds[0]!)).toMatchObject({ status: CostStatus.CHARGED, amountMicros: BETA_1K_MICROS, keyId: keyA });
    expect(byId.get(requestIds[5]!)).toMatchObject({ status: CostStatus.NOT_CHARGED, amountMicros: 0n, keyId: keyB });
    expect(byId.get(requestIds[6]!)).toMatchObject({ status: CostStatus.PENDING });
  });

  it("filters by key, model and time", async () => {
    expect((await billing.client.listCostRecords({ accountId, keyId: keyB })).records).toHaveLength(2);
    expect((await billing.client.listCostRecords({ accountId, model: "beta" })).records).toHaveLength(7);
    expect((await billing.client.listCostRecords({ accountId, model: "alpha-2.5-flare" })).records).toHaveLength(0);
    const future = BigInt(Date.now() + 60_000);
    expect((await billing.client.listCostRecords({ accountId, fromUnixMs: future })).records).toHaveLength(0);
    expect((await billing.client.listCostRecords({ accountId, toUnixMs: future })).records).toHaveLength(7);
  });

  it("never shows another account's requests", async () => {
    const { records } = await billing.client.listCostRecords({ accountId: otherAccountId });
    expect(records).toHaveLength(1);
    expect(records.some((record) => requestIds.includes(record.requestId))).toBe(false);
    await expect(billing.client.getCost({ requestId: requestIds[0]!, accountId: otherAccountId })).rejects.toSatisfy(
      (error) => error instanceof ConnectError && error.code === Code.NotFound,
    );
    expect((await billing.client.getCost({ requestId: requestIds[0]!, accountId })).cost!.keyId).toBe(keyA);
    // The public lookup never names the key.
    expect((await billing.client.getCost({ requestId: requestIds[0]! })).cost!.keyId).toBe("");
  });

  it("refuses a forged cursor and an oversized page", async () => {
    await expect(billing.client.listCostRecords({ accountId, cursor: "bm90IGEgY3Vyc29y" })).rejects.toSatisfy(
      (error) => error instanceof ConnectError && error.code === Code.InvalidArgument,
    );
    await expect(billing.client.listCostRecords({ accountId, limit: 5000 })).rejects.toBeInstanceOf(ConnectError);
  });

  it("refuses times PostgreSQL cannot hold, in a cursor or a bound, with InvalidArgument (not a database error)", async () => {
    const invalidArgument = (error: unknown) => error instanceof ConnectError && error.code === Code.InvalidArgument;
    const cursorAt = (iso: string) => Buffer.from(`${iso}|req_AAAAAAAAAAAAAAAAAAAAAA`).toString("base64url");
    for (const iso of ["-271821-04-20T00:00:00.000Z", "+275760-09-13T00:00:00.000Z", "-000001-01-01T00:00:00.000Z"]) {
      await expect(billing.client.listCostRecords({ accountId, cursor: cursorAt(iso) }), iso).rejects.toSatisfy(invalidArgument);
    }
    for (const unixMs of [-8_640_000_000_000_000n, 8_640_000_000_000_000n, -62_135_596_800_001n, 9_223_372_036_854_775_807n]) {
      await expect(billing.client.listCostRecords({ accountId, fromUnixMs: unixMs }), String(unixMs)).rejects.toSatisfy(invalidArgument);
      await expect(billing.client.listCostRecords({ accountId, toUnixMs: unixMs }), String(unixMs)).rejects.toSatisfy(invalidArgument);
      await expect(billing.client.getStatement({ accountId, fromUnixMs: unixMs }), String(unixMs)).rejects.toSatisfy(invalidArgument);
    }
    // A cursor this service gave still works.
    const first = await billing.client.listCostRecords({ accountId, limit: 1 });
    expect((await billing.client.listCostRecords({ accountId, limit: 1, cursor: first.nextCursor })).records).toHaveLength(1);
  });
});

describe("spend", () => {
  it("sums charges per UTC day with every day of the window present, counting only charged requests as requests", async () => {
    const { days } = await billing.client.getSpendByDay({ accountId, days: 30 });
    expect(days).toHaveLength(30);
    expect(days.at(-1)).toMatchObject({ date: new Date().toISOString().slice(0, 10), amountMicros: 5n * BETA_1K_MICROS, requests: 5, notCharged: 1, pending: 1 });
    expect(days.slice(0, -1).every((day) => day.amountMicros === 0n && day.requests === 0)).toBe(true);
  });

  it("sums every account's requests, spend and top-ups per day and ranks accounts and models (GetOverview)", async () => {
    const { days, topAccounts, topModels } = await billing.client.getOverview({ days: 7, top: 5 });
    expect(days).toHaveLength(7);
    expect(days.at(-1)).toMatchObject({
      date: new Date().toISOString().slice(0, 10),
      requests: 8,
      charged: 6,
      notCharged: 1,
      pending: 1,
      spendMicros: 6n * BETA_1K_MICROS,
      topUpMicros: 20n * USD,
      adjustmentMicros: 0n,
    });
    expect(days.slice(0, -1).every((day) => day.requests === 0 && day.topUpMicros === 0n)).toBe(true);
    expect(topAccounts.map((rank) => [rank.id, rank.requests, rank.charged, rank.notCharged, rank.spendMicros])).toEqual([
      [accountId, 7, 5, 1, 5n * BETA_1K_MICROS],
      [otherAccountId, 1, 1, 0, BETA_1K_MICROS],
    ]);
    expect(topModels).toEqual([expect.objectContaining({ id: "beta", requests: 8, charged: 6, spendMicros: 6n * BETA_1K_MICROS })]);
    expect((await billing.client.getOverview({ days: 1, top: 1 })).topAccounts).toHaveLength(1);
    await expect(billing.client.getOverview({ days: 367 })).rejects.toBeInstanceOf(ConnectError);
  });

  it("reports each key's captured and held amounts, only for the account's keys", async () => {
    const { keys } = await billing.client.getKeySpend({ accountId, keyIds: [keyA, keyB, "key_unknown"] });
    expect(keys).toEqual([
      expect.objectContaining({ keyId: keyA, capturedMicros: 5n * BETA_1K_MICROS, heldMicros: 0n }),
      expect.objectContaining({ keyId: keyB, capturedMicros: 0n, heldMicros: BETA_1K_MICROS }),
      expect.objectContaining({ keyId: "key_unknown", capturedMicros: 0n, heldMicros: 0n }),
    ]);
    const foreign = await billing.client.getKeySpend({ accountId: otherAccountId, keyIds: [keyA] });
    expect(foreign.keys[0]!.capturedMicros).toBe(0n);
  });
});

// Last: its account's top-up would count in the overview of today above.
describe("ListCostRecords within one millisecond", () => {
  it("leaves no gap between pages when requests were made within one millisecond", async () => {
    const sameMs = await fundedAccount(billing.client, 10n * USD);
    const ids: string[] = [];
    for (let index = 0; index < 3; index++) {
      const reserved = { requestId: uniqueId("req"), accountId: sameMs, keyId: uniqueId("key") };
      await billing.client.reserve(betaReserve(reserved));
      ids.push(reserved.requestId);
    }
    // 100, 200 and 300 µs into one millisecond, years back (out of the other tests' windows): a boundary cut
    // to the millisecond skips the middle one.
    await billing.db.query(
      "UPDATE billing.cost_records SET created_at = timestamptz '2020-01-01 08:00:00.000100+00' + (array_position($1::text[], request_id) - 1) * interval '100 microseconds' WHERE request_id = ANY($1::text[])",
      [ids],
    );
    const seen: string[] = [];
    let cursor = "";
    do {
      const page = await billing.client.listCostRecords({ accountId: sameMs, limit: 1, cursor });
      seen.push(...page.records.map((record) => record.requestId));
      cursor = page.nextCursor;
    } while (cursor);
    expect(seen).toEqual([...ids].reverse());
  });
});
