import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { microsToUsd, newId, usdToMicros } from "@orvado/core";
import { ErrorCode, type Account, type OverviewRank, type StatementEntry } from "@orvado/proto";
import type { ConsoleApiDeps } from "../deps.ts";
import { parseInput, refuse } from "../errors.ts";
import { accountJson, balanceJson, iso, keyJson, usageRow } from "../format.ts";
import { queryInteger } from "../query-numbers.ts";
import { costFilter, UsageQuery } from "../usage-query.ts";
import { requestDetail } from "../request-detail.ts";
import { sessionOf } from "../session.ts";
import type { AdminAccountDetail, AdminBalanceAnswer, ChannelResetAnswer, ChannelsAnswer, OverviewAnswer, RequestDetailAnswer, StatementAnswer, UsagePage } from "../answers.ts";

// The operator's views (docs/console.md): the overview across every account, the
// channels' health, and one account's page (balance, keys, statement, usage,
// adjustments). Billing and generation do the sums; the edge names and shapes them.

const DAY_MS = 86_400_000;
const OverviewQuery = z.strictObject({ days: queryInteger(1, 366).default(30), top: queryInteger(1, 100).default(10) });
const ChannelsQuery = z.strictObject({ hours: queryInteger(1, 720).default(24) });
const ChannelReset = z.strictObject({ model: z.string().min(1).max(200), channel: z.string().min(1).max(64) });
const StatementQuery = z.strictObject({ days: queryInteger(1, 366).default(30) });
const SIGNED_USD = /^-?\d{1,12}(\.\d{1,6})?$/;
const Adjustment = z.strictObject({
  usd: z.string().max(30).refine((text) => SIGNED_USD.test(text.trim()) && usdToMicros(text.trim().replace(/^-/, ""))! > 0n, 'must be a signed USD amount other than 0, such as "-1.50" or "2"'),
  note: z.string().trim().min(1, "must say why the balance is adjusted").max(500),
});

const money = (micros: bigint) => ({ usd: microsToUsd(micros), micros: Number(micros) });

function rankJson(rank: OverviewRank, label?: string) {
  return {
    id: rank.id,
    ...(label !== undefined && { email: label }),
    requests: rank.requests,
    charged: rank.charged,
    notCharged: rank.notCharged,
    spendUsd: microsToUsd(rank.spendMicros),
    spendMicros: Number(rank.spendMicros),
  };
}

function entryJson(entry: StatementEntry) {
  return {
    entryId: String(entry.entryId),
    kind: entry.kind,
    requestId: entry.requestId,
    keyId: entry.keyId,
    amountUsd: microsToUsd(entry.amountMicros),
    balanceAfterUsd: microsToUsd(entry.balanceAfterMicros),
    heldAfterUsd: microsToUsd(entry.heldAfterMicros),
    reason: entry.reason,
    createdAt: iso(entry.createdAtUnixMs),
  };
}

/** The account auth knows by this id (404 otherwise), before billing is asked anything about it. */
async function knownAccount(auth: ConsoleApiDeps["auth"], accountId: string): Promise<Account> {
  const { account } = await auth.getAccount({ accountId });
  if (!account) throw refuse(ErrorCode.NOT_FOUND, "No such account");
  return account;
}

export function adminOperatorRoutes(api: FastifyInstance, deps: ConsoleApiDeps) {
  const { auth, billing, generation } = deps;

  api.get("/admin/overview", async (request): Promise<OverviewAnswer> => {
    const query = parseInput(OverviewQuery, request.query, "query");
    const [overview, { accounts }] = await Promise.all([billing.getOverview({ days: query.days, top: query.top }), auth.listAccounts({})]);
    const emails = new Map(accounts.map((account) => [account.accountId, account.email]));
    const totals = overview.days.reduce(
      (sum, day) => ({
        requests: sum.requests + day.requests,
        charged: sum.charged + day.charged,
        notCharged: sum.notCharged + day.notCharged,
        pending: sum.pending + day.pending,
        spend: sum.spend + day.spendMicros,
        topUps: sum.topUps + day.topUpMicros,
      }),
      { requests: 0, charged: 0, notCharged: 0, pending: 0, spend: 0n, topUps: 0n },
    );
    const settled = totals.charged + totals.notCharged;
    return {
      days: overview.days.map((day) => ({
        date: day.date,
        requests: day.requests,
        charged: day.charged,
        notCharged: day.notCharged,
        pending: day.pending,
        spendUsd: microsToUsd(day.spendMicros),
        topUpUsd: microsToUsd(day.topUpMicros),
        adjustmentUsd: microsToUsd(day.adjustmentMicros),
      })),
      totals: {
        requests: totals.requests,
        charged: totals.charged,
        notCharged: totals.notCharged,
        pending: totals.pending,
        // Of the settled requests, the share that ended without a charge (a failed or expired job).
        errorRate: settled === 0 ? null : totals.notCharged / settled,
        spend: money(totals.spend),
        topUps: money(totals.topUps),
      },
      topAccounts: overview.topAccounts.map((rank) => rankJson(rank, emails.get(rank.id) ?? "")),
      topModels: overview.topModels.map((rank) => rankJson(rank)),
    };
  });

  api.get("/admin/channels", async (request): Promise<ChannelsAnswer> => {
    const { hours } = parseInput(ChannelsQuery, request.query, "query");
    const stats = await generation.getChannelStats({ hours });
    return {
      hours: stats.hours,
      channels: stats.channels.map((channel) => {
        const ended = channel.succeeded + channel.failed;
        return {
          model: channel.model,
          channel: channel.channel,
          provider: channel.provider,
          state: channel.state,
          healthy: channel.healthy,
          inUse: channel.inUse,
          capacity: channel.capacity,
          priority: channel.priority,
          succeeded: channel.succeeded,
          failed: channel.failed,
          running: channel.running,
          successRate: ended === 0 ? null : channel.succeeded / ended,
          latencyMs: { avg: channel.latencyAvgMs ?? null, p50: channel.latencyP50Ms ?? null, p95: channel.latencyP95Ms ?? null },
          // What the upstream said at the channel's last failure, whenever it was (every replica's).
          lastFailure: channel.lastFailureAtUnixMs === undefined ? null : { detail: channel.lastFailureDetail, at: iso(channel.lastFailureAtUnixMs) },
        };
      }),
    };
  });

  api.post("/admin/channels/reset", async (request): Promise<ChannelResetAnswer> => {
    const body = parseInput(ChannelReset, request.body);
    // An unknown model or channel is generation's NotFound: 404 not_found.
    const { channel } = await generation.resetChannel({ model: body.model, channel: body.channel });
    request.log.info({ model: body.model, channel: body.channel, by: sessionOf(request).account.accountId }, "channel breaker reset from the console");
    return { model: body.model, channel: channel!.name, state: channel!.state, healthy: channel!.healthy };
  });

  api.get<{ Params: { id: string } }>("/admin/accounts/:id", async (request): Promise<AdminAccountDetail> => {
    const account = await knownAccount(auth, request.params.id);
    const [{ balance }, { keys }] = await Promise.all([billing.getBalance({ accountId: account.accountId }), auth.listKeys({ accountId: account.accountId })]);
    const spend = keys.length === 0 ? { keys: [] } : await billing.getKeySpend({ accountId: account.accountId, keyIds: keys.map((key) => key.keyId) });
    const byKey = new Map(spend.keys.map((entry) => [entry.keyId, entry]));
    return {
      account: { ...accountJson(account), createdAt: iso(account.createdAtUnixMs) },
      balance: balanceJson(balance),
      keys: keys.map((key) => keyJson(key, byKey.get(key.keyId))),
    };
  });

  api.get<{ Params: { id: string } }>("/admin/accounts/:id/statement", async (request): Promise<StatementAnswer> => {
    const { days } = parseInput(StatementQuery, request.query, "query");
    const account = await knownAccount(auth, request.params.id);
    const statement = await billing.getStatement({ accountId: account.accountId, fromUnixMs: BigInt(Date.now() - days * DAY_MS) });
    return {
      days,
      openingBalanceUsd: microsToUsd(statement.openingBalanceMicros),
      closingBalanceUsd: microsToUsd(statement.closingBalanceMicros),
      closingHeldUsd: microsToUsd(statement.closingHeldMicros),
      // Newest first, as the other tables read.
      entries: statement.entries.map(entryJson).reverse(),
    };
  });

  async function keyNames(accountId: string) {
    const { keys } = await auth.listKeys({ accountId });
    return new Map(keys.map((key) => [key.keyId, key.name]));
  }

  api.get<{ Params: { id: string } }>("/admin/accounts/:id/usage", async (request): Promise<UsagePage> => {
    const query = parseInput(UsageQuery, request.query, "query");
    const account = await knownAccount(auth, request.params.id);
    const filter = costFilter(account.accountId, query);
    const [page, names] = await Promise.all([
      billing.listCostRecords({ ...filter, limit: query.limit, cursor: query.cursor ?? "" }),
      keyNames(account.accountId),
    ]);
    return { requests: page.records.map((cost) => usageRow(cost, names)), nextCursor: page.nextCursor || null };
  });

  api.get<{ Params: { id: string; requestId: string } }>("/admin/accounts/:id/usage/:requestId", async (request): Promise<RequestDetailAnswer> => {
    const account = await knownAccount(auth, request.params.id);
    return requestDetail(request, deps, account.accountId, request.params.requestId, await keyNames(account.accountId), { operator: true });
  });

  api.post<{ Params: { id: string } }>("/admin/accounts/:id/adjust", async (request): Promise<AdminBalanceAnswer> => {
    const body = parseInput(Adjustment, request.body);
    const account = await knownAccount(auth, request.params.id);
    const text = body.usd.trim();
    const micros = usdToMicros(text.replace(/^-/, ""))!;
    const admin = sessionOf(request).account;
    const { balance } = await billing.adjust({
      accountId: account.accountId,
      amountMicros: text.startsWith("-") ? -micros : micros,
      note: `${body.note} (by ${admin.email})`,
      adjustmentId: newId("adj"),
    });
    request.log.info({ accountId: account.accountId, by: admin.accountId, usd: text }, "console balance adjustment");
    return { balance: balanceJson(balance) };
  });
}
