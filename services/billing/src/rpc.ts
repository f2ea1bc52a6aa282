import { randomUUID } from "node:crypto";
import type { ConnectRouter, ServiceImpl } from "@connectrpc/connect";
import { BillingService, ErrorCode, Tier, type Refusal, type ReserveRequest } from "@orvado/proto";
import { Code, ConnectError } from "@orvado/rpc";
import { TIMESTAMP_RANGE_TEXT, isSupportedTimestamp, refusal, tierFromName, tierName } from "@orvado/core";
import type { Db } from "@orvado/db";
import { reserve } from "./reserve.ts";
import { MAX_TOP_UP_MICROS, adjust, topUp } from "./top-up.ts";
import { readBalance, type BalanceView } from "./ledger.ts";
import { findCost } from "./cost.ts";
import type { CostLookupLimiter } from "./cost-lookup-limit.ts";
import { listPriceChanges, listPrices, MAX_PRICE_MICROS, priceChangeRefusal, setPrice, type PriceChange } from "./prices.ts";
import { decodeCursor, keySpend, listCostRecords, spendByDay } from "./usage.ts";
import { accountStatement } from "./statement.ts";
import { recordEndUser } from "./end-users.ts";
import { replayLedger } from "./replay.ts";
import { overview } from "./overview.ts";

const MAX_IMAGES_PER_HOLD = 100;
/** The edge's bound on OpenAI's `user` (migration 011 checks it too). */
const MAX_END_USER_CHARS = 256;

function required(value: string, name: string): string {
  if (!value) throw new ConnectError(`${name} is required`, Code.InvalidArgument);
  return value;
}

const MODEL_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;

/** A bound from a caller, refused (InvalidArgument) when PostgreSQL could not compare with it. */
function optionalDate(unixMs: bigint | undefined, name: string): Date | undefined {
  if (unixMs === undefined) return undefined;
  if (!isSupportedTimestamp(Number(unixMs))) throw new ConnectError(`${name} must be a time ${TIMESTAMP_RANGE_TEXT}`, Code.InvalidArgument);
  return new Date(Number(unixMs));
}

const changeMessage = (change: PriceChange) => ({
  changeId: change.changeId,
  model: change.model,
  tier: tierFromName(change.tier)!,
  oldPriceMicros: change.oldPriceMicros ?? undefined,
  newPriceMicros: change.newPriceMicros,
  actor: change.actor,
  note: change.note,
  changedAtUnixMs: BigInt(change.changedAt.getTime()),
});

/** Page sizes: 0 means the default; anything else must be within bounds. */
function pageSize(requested: number, fallback: number, max: number): number {
  if (requested === 0) return fallback;
  if (requested > max) throw new ConnectError(`limit must be 1..${max}`, Code.InvalidArgument);
  return requested;
}

const balanceMessage = (balance: BalanceView) => ({
  accountId: balance.accountId,
  balanceMicros: balance.balanceMicros,
  heldMicros: balance.heldMicros,
  availableMicros: balance.availableMicros,
});

type Handlers = ServiceImpl<typeof BillingService>;

interface RouteDeps {
  db: Db;
  holdTtlMs: number;
  /** The outbox relay, told to publish a new `reserved` event now rather than at its next poll. */
  relay: { poke(): void };
  costLookups: CostLookupLimiter;
}

/** BillingService's handlers: money moves, prices, and the reports read from the ledger. */
export function billingRoutes(db: Db, holdTtlMs: number, relay: { poke(): void }, costLookups: CostLookupLimiter) {
  const deps: RouteDeps = { db, holdTtlMs, relay, costLookups };
  return (router: ConnectRouter) =>
    router.service(BillingService, { ...moneyHandlers(deps), ...priceHandlers(db), ...reportHandlers(db) });
}

/** The reservation as reserve() takes it; InvalidArgument for a request no caller of ours sends. */
function reservation(req: ReserveRequest) {
  if (req.tier === Tier.TIER_UNSPECIFIED) throw new ConnectError("tier is required", Code.InvalidArgument);
  if (req.imagesRequested < 1 || req.imagesRequested > MAX_IMAGES_PER_HOLD) {
    throw new ConnectError(`images_requested must be 1..${MAX_IMAGES_PER_HOLD}`, Code.InvalidArgument);
  }
  if (req.user.length > MAX_END_USER_CHARS) throw new ConnectError(`user must be at most ${MAX_END_USER_CHARS} characters`, Code.InvalidArgument);
  if (req.keyLimitMicros !== undefined && req.keyLimitMicros < 0n) {
    throw new ConnectError("key_limit_micros must not be negative", Code.InvalidArgument);
  }
  return {
    requestId: required(req.requestId, "request_id"),
    accountId: required(req.accountId, "account_id"),
    keyId: required(req.keyId, "key_id"),
    keyLimitMicros: req.keyLimitMicros,
    model: required(req.model, "model"),
    tier: req.tier,
    size: req.size,
    imagesRequested: req.imagesRequested,
  };
}

function moneyHandlers({ db, holdTtlMs, relay, costLookups }: RouteDeps): Pick<Handlers, "reserve" | "topUp" | "adjust" | "getBalance" | "getCost"> {
  return {
    async reserve(req) {
      const outcome = await reserve(db, reservation(req), holdTtlMs);
      if (!("hold" in outcome)) return { result: { case: "refusal", value: outcome.refusal } };
      relay.poke(); // publish `reserved` now, not at the next poll
      // After the hold: a refused request has no cost record to label. Should this write fail,
      // generation answers "not started" and the sweeper releases the hold.
      if (req.user) await recordEndUser(db, req.requestId, req.accountId, req.user);
      return { result: { case: "hold", value: outcome.hold } };
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
    async adjust(req) {
      const size = req.amountMicros < 0n ? -req.amountMicros : req.amountMicros;
      if (size === 0n || size > MAX_TOP_UP_MICROS) {
        throw new ConnectError("amount_micros must be non-zero and at most 1,000,000 USD either way", Code.InvalidArgument);
      }
      if (!req.note.trim()) throw new ConnectError("note is required: say why the balance is adjusted", Code.InvalidArgument);
      const balance = await adjust(db, {
        accountId: required(req.accountId, "account_id"),
        amountMicros: req.amountMicros,
        note: req.note.slice(0, 500),
        adjustmentId: req.adjustmentId || `adj_${randomUUID()}`,
      });
      return { balance: balanceMessage(balance) };
    },
    async getBalance(req) {
      return { balance: balanceMessage(await readBalance(db, required(req.accountId, "account_id"))) };
    },
    async getCost(req) {
      if (req.clientAddress) {
        const admission = await costLookups.admit(req.clientAddress);
        if (!admission.allowed) {
          const message = "Too many cost lookups from this address; try again later";
          return { refusal: refusal(ErrorCode.TOO_MANY_ATTEMPTS, message, { retryAfterSeconds: admission.retryAfterSeconds }) as Refusal };
        }
      }
      const cost = await findCost(db, required(req.requestId, "request_id"), req.accountId || undefined);
      if (!cost) throw new ConnectError(`no request ${req.requestId}`, Code.NotFound);
      return { cost };
    },
  };
}

function priceHandlers(db: Db): Pick<Handlers, "listPrices" | "setPrice" | "listPriceChanges"> {
  return {
    async listPrices() {
      const prices = await listPrices(db);
      return { prices: prices.map((price) => ({ model: price.model, tier: tierFromName(price.tier)!, priceMicros: price.priceMicros })) };
    },
    async setPrice(req) {
      if (!MODEL_ID.test(req.model)) throw new ConnectError("model must be a model id (letters, digits, . _ -)", Code.InvalidArgument);
      if (req.tier === Tier.TIER_UNSPECIFIED || !Tier[req.tier]) throw new ConnectError("tier is required", Code.InvalidArgument);
      const tier = tierName(req.tier);
      if (req.priceMicros < 0n || req.priceMicros > MAX_PRICE_MICROS) {
        throw new ConnectError("price_micros must be 0..1,000 USD", Code.InvalidArgument);
      }
      const refused = await priceChangeRefusal(db, { model: req.model, tier, priceMicros: req.priceMicros, free: req.free, create: req.create });
      if (refused) throw new ConnectError(refused, Code.InvalidArgument);
      const change = await setPrice(db, {
        model: req.model,
        tier,
        priceMicros: req.priceMicros,
        actor: required(req.actor, "actor").slice(0, 200),
        note: req.note.slice(0, 500),
      });
      return {
        price: { model: req.model, tier: req.tier, priceMicros: req.priceMicros },
        change: change ? changeMessage(change) : undefined,
      };
    },
    async listPriceChanges(req) {
      const changes = await listPriceChanges(db, req.model || null, pageSize(req.limit, 100, 1000));
      return { changes: changes.map(changeMessage) };
    },
  };
}

function reportHandlers(
  db: Db,
): Pick<Handlers, "listCostRecords" | "getSpendByDay" | "getOverview" | "getKeySpend" | "getStatement" | "replayLedger"> {
  return {
    async listCostRecords(req) {
      if (req.cursor && !decodeCursor(req.cursor)) throw new ConnectError("cursor is not one this service gave", Code.InvalidArgument);
      return listCostRecords(db, {
        accountId: required(req.accountId, "account_id"),
        keyId: req.keyId,
        model: req.model,
        user: req.user,
        from: optionalDate(req.fromUnixMs, "from_unix_ms"),
        to: optionalDate(req.toUnixMs, "to_unix_ms"),
        limit: pageSize(req.limit, 100, 1000),
        cursor: req.cursor || undefined,
      });
    },
    async getSpendByDay(req) {
      const days = pageSize(req.days, 30, 366);
      return { days: await spendByDay(db, required(req.accountId, "account_id"), days) };
    },
    async getOverview(req) {
      return overview(db, pageSize(req.days, 30, 366), pageSize(req.top, 10, 100));
    },
    async getKeySpend(req) {
      if (req.keyIds.length > 1000) throw new ConnectError("at most 1000 key ids", Code.InvalidArgument);
      return { keys: await keySpend(db, required(req.accountId, "account_id"), req.keyIds) };
    },
    async getStatement(req) {
      const statement = await accountStatement(db, required(req.accountId, "account_id"), {
        from: optionalDate(req.fromUnixMs, "from_unix_ms"),
        to: optionalDate(req.toUnixMs, "to_unix_ms"),
      });
      return { ...statement, entries: statement.entries.map((entry) => ({ ...entry, createdAtUnixMs: BigInt(entry.createdAt.getTime()) })) };
    },
    async replayLedger() {
      const report = await replayLedger(db);
      return {
        accountsChecked: report.accountsChecked,
        keysChecked: report.keysChecked,
        requestsChecked: report.requestsChecked,
        entriesRead: report.entriesRead,
        differences: report.differences,
      };
    },
  };
}
