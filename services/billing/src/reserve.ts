import { ErrorCode, type Refusal } from "@orvado/proto";
import { microsToUsd, refusal, SharedCalls, tierName, type TierName } from "@orvado/core";
import { prepareStatement, type Db, type Queryable } from "@orvado/db";
import { priceFor } from "./prices.ts";
import { BILLING_TOPIC, billingEventMessage } from "@orvado/events";
import type { Tier } from "@orvado/proto";

export interface ReserveInput {
  requestId: string;
  accountId: string;
  keyId: string;
  keyLimitMicros?: bigint;
  model: string;
  tier: Tier;
  size: string;
  imagesRequested: number;
}

export interface HoldView {
  requestId: string;
  unitPriceMicros: bigint;
  amountMicros: bigint;
  expiresAtUnixMs: bigint;
}

export type ReserveOutcome = { hold: HoldView } | { refusal: Refusal };

const reserveStatement = (fn: string) =>
  prepareStatement(
    `SELECT * FROM billing.${fn}($1::text[], $2::text[], $3::text[], $4::bigint[], $5::text[], $6::text[], $7::text[], $8::int[], $9::timestamptz[], $10::bigint[], $11::text[], $12, $13::text[], $14::bytea[])`,
  );
/** A batch's holds: billing.reserve_hold for each, in account order (sql/functions/reserve_holds.sql). */
const RESERVE_HOLDS = reserveStatement("reserve_holds");
/**
 * A hold alone (every reservation at one connection) is billing.reserve_hold itself:
 * the batch's loop around it costs more than the call inside it (pgbench at one
 * client on one database; docs/design-choices.md#shared-statements).
 */
const RESERVE_ONE = prepareStatement(
  "SELECT 1 AS item, h.* FROM billing.reserve_hold($1, $2, $3, $4::bigint, $5, $6, $7, $8::int, $9::timestamptz, $10::bigint, $11, $12, $13, $14::bytea) AS h",
);

const quotaRefusal = (message: string) => ({ refusal: refusal(ErrorCode.INSUFFICIENT_USER_QUOTA, message) as Refusal });

interface HoldRow {
  outcome: "held" | "existing" | "no_price" | "price_changed" | "insufficient_account" | "insufficient_key";
  unit_price_micros: bigint | null;
  amount_micros: bigint | null;
  hold_expires_at: Date | null;
  left_micros: bigint | null;
}

/**
 * The unit price each model x tier had when this process last looked. It only
 * lets the `reserved` event be built before the one database call; the database
 * checks it against the table and answers price_changed if it moved.
 */
const knownPrices = new Map<string, bigint>();

/**
 * Holds price x n against the account balance and the key's own limit in one
 * transaction, with both rows locked: parallel requests can never overdraw.
 * A repeated call for the same request id returns the hold it already made.
 * The steps run inside PostgreSQL as billing.reserve_hold (sql/functions/): one
 * round trip, so the account's row lock is held for microseconds, not a dozen
 * network round trips; concurrent reservations share that round trip (holdInDatabase).
 */
export async function reserve(db: Db, input: ReserveInput, holdTtlMs: number): Promise<ReserveOutcome> {
  const tier = tierName(input.tier);
  const priceKey = `${input.model}|${tier}`;
  for (let attempt = 0; attempt < 3; attempt++) {
    const expected = knownPrices.get(priceKey) ?? (await priceFor(db, input.model, tier));
    if (expected === null) return noPrice(input.model, tier);
    knownPrices.set(priceKey, expected);
    const row = await holdInDatabase(db, input, tier, expected, holdTtlMs);
    switch (row.outcome) {
      case "held":
      case "existing":
        return { hold: holdView(input.requestId, row) };
      case "no_price":
        knownPrices.delete(priceKey);
        return noPrice(input.model, tier);
      case "price_changed":
        knownPrices.delete(priceKey); // an operator changed it: read it again and rebuild the event
        continue;
      case "insufficient_account":
        return quotaRefusal(
          `Insufficient balance: this request costs $${microsToUsd(row.amount_micros!)} and the account has $${microsToUsd(row.left_micros!)} available`,
        );
      case "insufficient_key": {
        const left = row.left_micros!;
        return quotaRefusal(
          `Insufficient key balance: this request costs $${microsToUsd(row.amount_micros!)} and the key has $${microsToUsd(left < 0n ? 0n : left)} left of its $${microsToUsd(input.keyLimitMicros!)} limit`,
        );
      }
    }
  }
  throw new Error(`the price of ${input.model} ${tier} kept changing while reserving ${input.requestId}`);
}

const noPrice = (model: string, tier: TierName): ReserveOutcome => ({
  refusal: refusal(ErrorCode.TIER_NOT_OFFERED, `The model ${model} is not offered at the ${tier} tier`) as Refusal,
});

function holdView(requestId: string, row: HoldRow): HoldView {
  return {
    requestId,
    unitPriceMicros: row.unit_price_micros!,
    amountMicros: row.amount_micros!,
    expiresAtUnixMs: BigInt(new Date(row.hold_expires_at!).getTime()),
  };
}

interface HoldCall {
  input: ReserveInput;
  tier: TierName;
  unitPriceMicros: bigint;
  holdTtlMs: number;
}

/**
 * Reservations of concurrent requests on one Db share a statement
 * (billing.reserve_holds in sql/functions/; SharedCalls): one round trip and one
 * durable commit carry every hold that arrived while the previous call was in
 * flight, each made by billing.reserve_hold exactly as alone, in account order.
 */
const holdCalls = new WeakMap<Queryable, SharedCalls<HoldCall, HoldRow>>();

function holdInDatabase(q: Queryable, input: ReserveInput, tier: TierName, unitPriceMicros: bigint, holdTtlMs: number): Promise<HoldRow> {
  let calls = holdCalls.get(q);
  if (!calls) {
    calls = new SharedCalls((batch) => reserveHolds(q, batch));
    holdCalls.set(q, calls);
  }
  return calls.call({ input, tier, unitPriceMicros, holdTtlMs });
}

async function reserveHolds(q: Queryable, calls: HoldCall[]): Promise<HoldRow[]> {
  const rows = calls.map(({ input, tier, unitPriceMicros, holdTtlMs }) => {
    const expiresAt = new Date(Date.now() + holdTtlMs);
    // Built before the call: it is written to billing's outbox only if the hold is made.
    const event = billingEventMessage(input, {
      case: "reserved",
      value: {
        model: input.model,
        tier: input.tier,
        size: input.size,
        imagesRequested: input.imagesRequested,
        unitPriceMicros,
        amountMicros: unitPriceMicros * BigInt(input.imagesRequested),
        expiresAtUnixMs: BigInt(expiresAt.getTime()),
      },
    });
    return { input, tier, unitPriceMicros, expiresAt, event };
  });
  const columns = [
    rows.map((row) => row.input.requestId),
    rows.map((row) => row.input.accountId),
    rows.map((row) => row.input.keyId),
    rows.map((row) => row.input.keyLimitMicros ?? null),
    rows.map((row) => row.input.model),
    rows.map((row) => row.tier),
    rows.map((row) => row.input.size),
    rows.map((row) => row.input.imagesRequested),
    rows.map((row) => row.expiresAt),
    rows.map((row) => row.unitPriceMicros),
    rows.map((row) => `${row.input.model} ${row.tier} x${row.input.imagesRequested}`),
    BILLING_TOPIC,
    rows.map((row) => row.event.id),
    rows.map((row) => Buffer.from(row.event.value.buffer, row.event.value.byteOffset, row.event.value.byteLength)),
  ];
  // Alone, each column's only value; the topic is one value either way.
  const params = rows.length === 1 ? columns.map((column) => (Array.isArray(column) ? column[0] : column)) : columns;
  const { rows: held } = await q.query<HoldRow & { item: number }>(rows.length === 1 ? RESERVE_ONE : RESERVE_HOLDS, params);
  const byItem = new Map(held.map((row) => [Number(row.item), row]));
  return rows.map((_, index) => byItem.get(index + 1)!);
}
