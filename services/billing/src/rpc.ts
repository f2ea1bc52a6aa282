import { randomUUID } from "node:crypto";
import type { ConnectRouter } from "@connectrpc/connect";
import { BillingService, Tier } from "@orvado/proto";
import { Code, ConnectError } from "@orvado/rpc";
import { tierFromName } from "@orvado/core";
import type { Db } from "@orvado/db";
import { reserve } from "./reserve.ts";
import { MAX_TOP_UP_MICROS, topUp } from "./top-up.ts";
import { readBalance, type BalanceView } from "./ledger.ts";
import { findCost } from "./cost.ts";
import { listPrices } from "./prices.ts";

const MAX_IMAGES_PER_HOLD = 100;

function required(value: string, name: string): string {
  if (!value) throw new ConnectError(`${name} is required`, Code.InvalidArgument);
  return value;
}

const balanceMessage = (balance: BalanceView) => ({
  accountId: balance.accountId,
  balanceMicros: balance.balanceMicros,
  heldMicros: balance.heldMicros,
  availableMicros: balance.availableMicros,
});

export function billingRoutes(db: Db, holdTtlMs: number, relay: { poke(): void }) {
  return (router: ConnectRouter) =>
    router.service(BillingService, {
      async reserve(req) {
        if (req.tier === Tier.TIER_UNSPECIFIED) throw new ConnectError("tier is required", Code.InvalidArgument);
        if (req.imagesRequested < 1 || req.imagesRequested > MAX_IMAGES_PER_HOLD) {
          throw new ConnectError(`images_requested must be 1..${MAX_IMAGES_PER_HOLD}`, Code.InvalidArgument);
        }
        if (req.keyLimitMicros !== undefined && req.keyLimitMicros < 0n) {
          throw new ConnectError("key_limit_micros must not be negative", Code.InvalidArgument);
        }
        const outcome = await reserve(
          db,
          {
            requestId: required(req.requestId, "request_id"),
            accountId: required(req.accountId, "account_id"),
            keyId: required(req.keyId, "key_id"),
            keyLimitMicros: req.keyLimitMicros,
            model: required(req.model, "model"),
            tier: req.tier,
            size: req.size,
            imagesRequested: req.imagesRequested,
          },
          holdTtlMs,
        );
        if ("hold" in outcome) relay.poke(); // publish `reserved` now, not at the next poll
        return "hold" in outcome
          ? { result: { case: "hold", value: outcome.hold } }
          : { result: { case: "refusal", value: outcome.refusal } };
      },
      async topUp(req) {
        if (req.amountMicros <= 0n || req.amountMicros > MAX_TOP_UP_MICROS) {
          throw new ConnectError("amount_micros must be positive and at most 1,000,000 USD", Code.InvalidArgument);
        }
        const balance = await topUp(db, {
          accountId: required(req.accountId, "account_id"),
          amountMicros: req.amountMicros,
          note: req.note.slice(0, 500),
          topUpId: req.topUpId || `topup_${randomUUID()}`,
        });
        return { balance: balanceMessage(balance) };
      },
      async getBalance(req) {
        return { balance: balanceMessage(await readBalance(db, required(req.accountId, "account_id"))) };
      },
      async getCost(req) {
        const cost = await findCost(db, required(req.requestId, "request_id"));
        if (!cost) throw new ConnectError(`no request ${req.requestId}`, Code.NotFound);
        return { cost };
      },
      async listPrices() {
        const prices = await listPrices(db);
        return { prices: prices.map((price) => ({ model: price.model, tier: tierFromName(price.tier)!, priceMicros: price.priceMicros })) };
      },
    });
}
