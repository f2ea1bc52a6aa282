import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { microsToUsd, newId, tierFromName, tierName, usdToMicros } from "@orvado/core";
import { ErrorCode, Role, type Price, type PriceChange } from "@orvado/proto";
import type { ConsoleApiDeps } from "../deps.ts";
import { parseInput, refuse } from "../errors.ts";
import { accountJson, balanceJson, iso, modelJson } from "../format.ts";
import { sessionOf } from "../session.ts";
import type { AdminAccountAnswer, AdminAccountsAnswer, AdminBalanceAnswer, AdminModelsAnswer, PriceSetAnswer, PricesAnswer } from "../answers.ts";

const usd = z.string().refine((text) => usdToMicros(text) !== null, "must be a decimal USD amount such as \"10.00\"");
const NewAccount = z.strictObject({ email: z.string().max(254), password: z.string().max(1024), role: z.enum(["user", "admin"]).default("user") });
const TopUp = z.strictObject({
  usd: usd.refine((text) => usdToMicros(text)! > 0n, "must be more than 0"),
  note: z.string().max(500).default(""),
});
// The ranges auth stores (services/auth/src/input.ts); null puts a limit back to its default.
const Limits = z.strictObject({
  maxConcurrentJobs: z.number().int().min(0).max(100_000).nullable(),
  requestsPerMinute: z.number().int().min(1).max(1_000_000).nullable(),
});
const PriceUpdate = z.strictObject({
  model: z.string().min(1).max(200),
  tier: z.string().refine((text) => tierFromName(text) !== null, "must be 1K, 2K or 4K"),
  usd,
  // Required to set a price of $0 (billing refuses 0 without it).
  free: z.boolean().default(false),
  // Gives a model or tier its first price; without it only an existing price changes.
  create: z.boolean().default(false),
  note: z.string().max(500).default(""),
});

const priceJson = (price: Price) => ({
  model: price.model,
  tier: tierName(price.tier),
  usd: microsToUsd(price.priceMicros),
  micros: Number(price.priceMicros),
});

const changeJson = (change: PriceChange) => ({
  model: change.model,
  tier: tierName(change.tier),
  oldUsd: change.oldPriceMicros === undefined ? null : microsToUsd(change.oldPriceMicros),
  newUsd: microsToUsd(change.newPriceMicros),
  actor: change.actor,
  note: change.note,
  changedAt: iso(change.changedAtUnixMs),
});

/** /admin/*: accounts, top-ups, prices and channels. The scope's hook has already checked the admin role. */
export function adminRoutes(api: FastifyInstance, { auth, billing, generation }: ConsoleApiDeps) {
  api.get("/admin/accounts", async (): Promise<AdminAccountsAnswer> => {
    const { accounts } = await auth.listAccounts({});
    const balances = await Promise.all(accounts.map((account) => billing.getBalance({ accountId: account.accountId })));
    return {
      accounts: accounts.map((account, index) => ({
        ...accountJson(account),
        createdAt: iso(account.createdAtUnixMs),
        balanceUsd: balanceJson(balances[index]!.balance).balanceUsd,
      })),
    };
  });

  api.post("/admin/accounts", async (request, reply) => {
    const body = parseInput(NewAccount, request.body);
    // An email already taken comes back as AlreadyExists: 409 account_exists.
    const { account } = await auth.createAccount({ email: body.email, password: body.password, role: body.role === "admin" ? Role.ADMIN : Role.USER });
    request.log.info({ accountId: account!.accountId, by: sessionOf(request).account.accountId }, "account created from the console");
    return reply.code(201).send({ account: accountJson(account!) } satisfies AdminAccountAnswer);
  });

  api.post<{ Params: { id: string } }>("/admin/accounts/:id/topup", async (request): Promise<AdminBalanceAnswer> => {
    const body = parseInput(TopUp, request.body);
    // Auth first: money must not land on an account that does not exist (404).
    const { account } = await auth.getAccount({ accountId: request.params.id });
    const admin = sessionOf(request).account;
    const { balance } = await billing.topUp({
      accountId: account!.accountId,
      amountMicros: usdToMicros(body.usd)!,
      note: body.note === "" ? `console top-up by ${admin.email}` : body.note,
      topUpId: newId("topup"),
    });
    request.log.info({ accountId: account!.accountId, by: admin.accountId, usd: body.usd }, "console top-up");
    return { balance: balanceJson(balance) };
  });

  for (const [action, disabled] of [["disable", true], ["enable", false]] as const) {
    api.post<{ Params: { id: string } }>(`/admin/accounts/:id/${action}`, async (request): Promise<AdminAccountAnswer> => {
      if (disabled && request.params.id === sessionOf(request).account.accountId) {
        throw refuse(ErrorCode.INVALID_REQUEST, "An admin cannot disable their own account");
      }
      const { account } = await auth.setAccountDisabled({ accountId: request.params.id, disabled });
      return { account: accountJson(account!) };
    });
  }

  api.put<{ Params: { id: string } }>("/admin/accounts/:id/limits", async (request): Promise<AdminAccountAnswer> => {
    const body = parseInput(Limits, request.body);
    const { account } = await auth.setAccountLimits({
      accountId: request.params.id,
      limits: { maxConcurrentJobs: body.maxConcurrentJobs ?? undefined, requestsPerMinute: body.requestsPerMinute ?? undefined },
    });
    request.log.info({ accountId: account!.accountId, by: sessionOf(request).account.accountId, ...body }, "account limits set from the console");
    return { account: accountJson(account!) };
  });

  api.get("/admin/prices", async (): Promise<PricesAnswer> => {
    const [{ prices }, { changes }] = await Promise.all([billing.listPrices({}), billing.listPriceChanges({ limit: 200 })]);
    return { prices: prices.map(priceJson), changes: changes.map(changeJson) };
  });

  api.put("/admin/prices", async (request): Promise<PriceSetAnswer> => {
    const body = parseInput(PriceUpdate, request.body);
    const answer = await billing.setPrice({
      model: body.model,
      tier: tierFromName(body.tier)!,
      priceMicros: usdToMicros(body.usd)!,
      free: body.free,
      create: body.create,
      actor: sessionOf(request).account.email,
      note: body.note,
    });
    return { price: priceJson(answer.price!), change: changeJson(answer.change!) };
  });

  api.get("/admin/models", async (): Promise<AdminModelsAnswer> => {
    const { models } = await generation.listModels({});
    return {
      models: models.map((model) => ({
        ...modelJson(model),
        channels: model.channels.map((channel) => ({ name: channel.name, provider: channel.provider, healthy: channel.healthy })),
      })),
    };
  });
}
