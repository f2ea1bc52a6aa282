import type { accountJson, balanceJson, keyJson, modelJson, usageRow } from "./format.ts";
import type { requestDetail } from "./request-detail.ts";
import type { answerItem } from "../../images-answer.ts";

// The console API's answers as types. The routes declare them as their return types, and the
// console's JS imports them through JSDoc (services/edge/console/lib/answers.js), so a change
// to an answer that the console does not follow fails `npm run typecheck`.

export type AccountJson = ReturnType<typeof accountJson>;
export type BalanceJson = ReturnType<typeof balanceJson>;
export type KeyJson = ReturnType<typeof keyJson>;
export type ModelJson = ReturnType<typeof modelJson>;
export type UsageRowJson = ReturnType<typeof usageRow>;
type Money = { usd: string; micros: number };

/** POST /session and GET /me. */
export type SessionAnswer = { account: AccountJson; csrfToken: string };
/** GET /balance. */
export type BalanceAnswer = BalanceJson;
/** GET /spend. */
export type SpendAnswer = { days: { date: string; usd: string; micros: number; requests: number; notCharged: number; pending: number }[] };
/** GET /keys. */
export type KeysAnswer = { keys: KeyJson[] };
/** POST /keys: the secret is shown this once. */
export type NewKeyAnswer = { key: KeyJson | undefined; secret: string };
/** GET /models: each tier's price as a USD string. */
export type ModelsAnswer = { models: (ModelJson & { prices: Record<string, string> })[] };
/** GET /usage and GET /admin/accounts/:id/usage. */
export type UsagePage = { requests: UsageRowJson[]; nextCursor: string | null };
/** GET /usage/:requestId and GET /admin/accounts/:id/usage/:requestId. */
export type RequestDetailAnswer = Awaited<ReturnType<typeof requestDetail>>;
/** POST /playground. */
export type PlaygroundAnswer = {
  created: number;
  data: ReturnType<typeof answerItem>[];
  requestId: string;
  cost: UsageRowJson | null;
};

/** GET /admin/accounts. */
export type AdminAccountsAnswer = { accounts: (AccountJson & { createdAt: string | null; balanceUsd: string })[] };
/** POST /admin/accounts. */
export type AdminAccountAnswer = { account: AccountJson };
/** GET /admin/accounts/:id. */
export type AdminAccountDetail = { account: AccountJson & { createdAt: string | null }; balance: BalanceJson; keys: KeyJson[] };
/** POST /admin/accounts/:id/topup and /adjust. */
export type AdminBalanceAnswer = { balance: BalanceJson };
/** GET /admin/accounts/:id/statement: newest entry first. */
export type StatementAnswer = {
  days: number;
  openingBalanceUsd: string;
  closingBalanceUsd: string;
  closingHeldUsd: string;
  entries: {
    entryId: string;
    kind: string;
    requestId: string;
    keyId: string;
    amountUsd: string;
    balanceAfterUsd: string;
    heldAfterUsd: string;
    reason: string;
    createdAt: string | null;
  }[];
};
type RankJson = { id: string; email?: string; requests: number; charged: number; notCharged: number; spendUsd: string; spendMicros: number };
/** GET /admin/overview. errorRate: the share of settled requests that ended without a charge, null when none settled. */
export type OverviewAnswer = {
  days: { date: string; requests: number; charged: number; notCharged: number; pending: number; spendUsd: string; topUpUsd: string; adjustmentUsd: string }[];
  totals: { requests: number; charged: number; notCharged: number; pending: number; errorRate: number | null; spend: Money; topUps: Money };
  topAccounts: RankJson[];
  topModels: RankJson[];
};
/** GET /admin/channels. */
export type ChannelsAnswer = {
  hours: number;
  channels: {
    model: string;
    channel: string;
    provider: string;
    state: string;
    healthy: boolean;
    inUse: number;
    capacity: number;
    priority: number;
    succeeded: number;
    failed: number;
    running: number;
    successRate: number | null;
    latencyMs: { avg: number | null; p50: number | null; p95: number | null };
    /** The channel's last upstream failure (what the upstream said, and when); null when it never failed. */
    lastFailure: { detail: string; at: string | null } | null;
  }[];
};
/** POST /admin/channels/reset: the channel's breaker as every replica now sees it. */
export type ChannelResetAnswer = { model: string; channel: string; state: string; healthy: boolean };
type PriceJson = { model: string; tier: string; usd: string; micros: number };
type PriceChangeJson = { model: string; tier: string; oldUsd: string | null; newUsd: string; actor: string; note: string; changedAt: string | null };
/** GET /admin/prices. */
export type PricesAnswer = { prices: PriceJson[]; changes: PriceChangeJson[] };
/** PUT /admin/prices. */
export type PriceSetAnswer = { price: PriceJson; change: PriceChangeJson };
/** GET /admin/models. */
export type AdminModelsAnswer = { models: (ModelJson & { channels: { name: string; provider: string; healthy: boolean }[] })[] };
