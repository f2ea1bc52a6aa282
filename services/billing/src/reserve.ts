import { ErrorCode, type Refusal } from "@orvado/proto";
import { microsToUsd, refusal, tierName, type TierName } from "@orvado/core";
import type { Db, Queryable } from "@orvado/db";
import { appendEntry, moveBalance, moveKeySpend, readBalance } from "./ledger.ts";
import { priceFor } from "./prices.ts";
import { emitBillingEvent } from "@orvado/events";
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

const quotaRefusal = (message: string) => ({ refusal: refusal(ErrorCode.INSUFFICIENT_USER_QUOTA, message) as Refusal });

/**
 * Holds price x n against the account balance and the key's own limit in one
 * transaction, with both rows locked: parallel requests can never overdraw.
 * A repeated call for the same request id returns the hold it already made.
 */
export async function reserve(db: Db, input: ReserveInput, holdTtlMs: number): Promise<ReserveOutcome> {
  const tier = tierName(input.tier);
  return db.tx(async (q) => {
    // Calls for one request id take turns, so a retry that races the first call
    // sees its committed hold below instead of being refused for the money it holds.
    await q.query("SELECT pg_advisory_xact_lock(hashtext($1))", [`orvado.billing.reserve:${input.requestId}`]);
    const existing = await existingHold(q, input.requestId);
    if (existing) return { hold: existing };
    const unitPriceMicros = await priceFor(q, input.model, tier);
    if (unitPriceMicros === null) {
      return { refusal: refusal(ErrorCode.TIER_NOT_OFFERED, `The model ${input.model} is not offered at the ${tier} tier`) as Refusal };
    }
    const amountMicros = unitPriceMicros * BigInt(input.imagesRequested);
    const shortfall = await findShortfall(q, input, amountMicros);
    if (shortfall) return quotaRefusal(shortfall);
    return { hold: await recordHold(q, input, tier, unitPriceMicros, amountMicros, holdTtlMs) };
  });
}

async function findShortfall(q: Queryable, input: ReserveInput, amountMicros: bigint): Promise<string | null> {
  const balance = await readBalance(q, input.accountId, true);
  if (balance.availableMicros < amountMicros) {
    return `Insufficient balance: this request costs $${microsToUsd(amountMicros)} and the account has $${microsToUsd(balance.availableMicros)} available`;
  }
  if (input.keyLimitMicros === undefined) return null;
  await q.query("INSERT INTO billing.key_spend (key_id, account_id) VALUES ($1, $2) ON CONFLICT (key_id) DO NOTHING", [
    input.keyId,
    input.accountId,
  ]);
  const spend = await q.query<{ captured_micros: bigint; held_micros: bigint }>(
    "SELECT captured_micros, held_micros FROM billing.key_spend WHERE key_id = $1 FOR UPDATE",
    [input.keyId],
  );
  const used = (spend.rows[0]?.captured_micros ?? 0n) + (spend.rows[0]?.held_micros ?? 0n);
  const left = input.keyLimitMicros - used;
  if (left < amountMicros) {
    return `Insufficient key balance: this request costs $${microsToUsd(amountMicros)} and the key has $${microsToUsd(left < 0n ? 0n : left)} left of its $${microsToUsd(input.keyLimitMicros)} limit`;
  }
  return null;
}

async function recordHold(
  q: Queryable,
  input: ReserveInput,
  tier: TierName,
  unitPriceMicros: bigint,
  amountMicros: bigint,
  holdTtlMs: number,
): Promise<HoldView> {
  const expiresAt = new Date(Date.now() + holdTtlMs);
  await appendEntry(q, {
    kind: "reserve",
    accountId: input.accountId,
    keyId: input.keyId,
    requestId: input.requestId,
    amountMicros,
    reason: `${input.model} ${tier} x${input.imagesRequested}`,
  });
  await moveBalance(q, input.accountId, 0n, amountMicros);
  await moveKeySpend(q, input.keyId, input.accountId, 0n, amountMicros);
  await q.query(
    `INSERT INTO billing.cost_records (request_id, account_id, key_id, model, size, tier, images_requested,
       unit_price_micros, reserved_micros, hold_expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
    [input.requestId, input.accountId, input.keyId, input.model, input.size, tier, input.imagesRequested, unitPriceMicros, amountMicros, expiresAt],
  );
  const hold = { requestId: input.requestId, unitPriceMicros, amountMicros, expiresAtUnixMs: BigInt(expiresAt.getTime()) };
  await emitBillingEvent(q, "billing", input, {
    case: "reserved",
    value: {
      model: input.model,
      tier: input.tier,
      size: input.size,
      imagesRequested: input.imagesRequested,
      unitPriceMicros,
      amountMicros,
      expiresAtUnixMs: hold.expiresAtUnixMs,
    },
  });
  return hold;
}

async function existingHold(q: Queryable, requestId: string): Promise<HoldView | null> {
  const result = await q.query<{ unit_price_micros: bigint; reserved_micros: bigint; hold_expires_at: Date }>(
    "SELECT unit_price_micros, reserved_micros, hold_expires_at FROM billing.cost_records WHERE request_id = $1",
    [requestId],
  );
  const row = result.rows[0];
  if (!row) return null;
  return {
    requestId,
    unitPriceMicros: row.unit_price_micros,
    amountMicros: row.reserved_micros,
    expiresAtUnixMs: BigInt(new Date(row.hold_expires_at).getTime()),
  };
}
