import { microsToUsd, tierFromName } from "@orvado/core";
import { AuthService, BillingService, GenerationService, Role, WebhookService, type AccountLimits, type ApiKey } from "@orvado/proto";
import { ConnectError, type Client } from "@orvado/rpc";
import type { Command } from "./args.ts";
import { listChannels, resetChannel } from "./channels.ts";
import { createWebhook, deleteWebhook, listWebhooks } from "./webhook-commands.ts";
import { balanceJson, costJson, isoTime, priceJson, roleText, usdOrNull, type Json } from "./format.ts";
import { priceChangeJson, render, replayJson, statementCsv, statementJson } from "./format.ts";

export interface Clients {
  auth: Client<typeof AuthService>;
  billing: Client<typeof BillingService>;
  generation: Client<typeof GenerationService>;
  /** Generation's WebhookService. */
  webhooks: Client<typeof WebhookService>;
}

export interface CommandContext {
  clients: Clients;
  now(): number;
  newTopUpId(): string;
  /** Who is at the keyboard, recorded with price changes (for example "cli:alice"). */
  operator: string;
}

export type ServiceName = keyof Clients;

/** A call that failed, with what the operator was doing, for a message that makes sense. */
export class RpcFailure extends Error {
  constructor(
    readonly what: string,
    readonly service: ServiceName,
    readonly error: ConnectError,
  ) {
    super(`${what}: ${error.message}`);
  }
}

// A stuck service must not hang an operator's shell (or a script) forever.
const CALL_TIMEOUT_MS = 15_000;
export const CALL = { timeoutMs: CALL_TIMEOUT_MS };
const DAY_MS = 86_400_000;

export async function call<T>(service: ServiceName, what: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    throw new RpcFailure(what, service, ConnectError.from(error));
  }
}

/** A response without its main message is a broken service, not a refusal. */
export function present<T>(value: T | undefined, service: ServiceName, what: string): T {
  if (value === undefined) throw new Error(`${what}: the ${service} service answered without a result`);
  return value;
}

export type Out = { [key: string]: Json };

/** Output that is not the usual JSON object (CSV), or that must end with a failing exit code. */
export class Printed {
  constructor(
    readonly text: string,
    readonly exitCode = 0,
  ) {}
}

export async function createAccount(ctx: CommandContext, cmd: Extract<Command, { name: "accounts create" }>): Promise<Out> {
  const what = `creating account ${cmd.email}`;
  const response = await call("auth", what, () =>
    ctx.clients.auth.createAccount(
      { email: cmd.email, password: cmd.password, role: cmd.admin ? Role.ADMIN : Role.USER },
      CALL,
    ),
  );
  const account = present(response.account, "auth", what);
  return { account_id: account.accountId, email: account.email, role: roleText(account.role) };
}

export async function topUp(ctx: CommandContext, cmd: Extract<Command, { name: "accounts topup" }>): Promise<Out> {
  // Billing would credit any id; auth says whether the account exists, so a typo cannot strand money.
  const lookup = `looking up account ${cmd.accountId}`;
  present((await call("auth", lookup, () => ctx.clients.auth.getAccount({ accountId: cmd.accountId }, CALL))).account, "auth", lookup);
  const topUpId = ctx.newTopUpId();
  // The id is in the message so an operator who saw a timeout can find out whether it applied.
  const what = `topping up account ${cmd.accountId} by ${microsToUsd(cmd.amountMicros)} USD (top_up_id ${topUpId})`;
  const response = await call("billing", what, () =>
    ctx.clients.billing.topUp(
      { accountId: cmd.accountId, amountMicros: cmd.amountMicros, note: cmd.note, topUpId },
      CALL,
    ),
  );
  const balance = present(response.balance, "billing", what);
  return { account_id: balance.accountId, ...balanceJson(balance), top_up_id: topUpId };
}

export async function adjustBalance(ctx: CommandContext, cmd: Extract<Command, { name: "accounts adjust" }>): Promise<Out> {
  const lookup = `looking up account ${cmd.accountId}`;
  present((await call("auth", lookup, () => ctx.clients.auth.getAccount({ accountId: cmd.accountId }, CALL))).account, "auth", lookup);
  const adjustmentId = ctx.newTopUpId().replace(/^topup_/, "adj_");
  const what = `adjusting account ${cmd.accountId} by ${microsToUsd(cmd.amountMicros)} USD (adjustment_id ${adjustmentId})`;
  const response = await call("billing", what, () =>
    ctx.clients.billing.adjust({ accountId: cmd.accountId, amountMicros: cmd.amountMicros, note: cmd.note, adjustmentId }, CALL),
  );
  const balance = present(response.balance, "billing", what);
  return { account_id: balance.accountId, ...balanceJson(balance), adjustment_id: adjustmentId };
}

export async function showAccount(ctx: CommandContext, cmd: Extract<Command, { name: "accounts show" }>): Promise<Out> {
  const lookup = cmd.accountId !== undefined ? `looking up account ${cmd.accountId}` : `looking up the account with email ${cmd.email}`;
  // Auth first: an unknown account is reported as such rather than as an empty balance.
  const { account } = await call("auth", lookup, () =>
    ctx.clients.auth.getAccount(cmd.accountId !== undefined ? { accountId: cmd.accountId } : { email: cmd.email }, CALL),
  );
  const found = present(account, "auth", lookup);
  const balanceWhat = `reading the balance of account ${found.accountId}`;
  const { balance } = await call("billing", balanceWhat, () =>
    ctx.clients.billing.getBalance({ accountId: found.accountId }, CALL),
  );
  return {
    account_id: found.accountId,
    email: found.email,
    role: roleText(found.role),
    disabled: found.disabled,
    ...limitsJson(found.limits),
    ...balanceJson(present(balance, "billing", balanceWhat)),
  };
}

/** Accounts, oldest first, each with its balance; with --email, those whose email contains it. */
export async function listAccounts(ctx: CommandContext, cmd: Extract<Command, { name: "accounts list" }>): Promise<Out> {
  const what = cmd.emailContains ? `listing the accounts whose email contains ${cmd.emailContains}` : "listing the accounts";
  const { accounts } = await call("auth", what, () => ctx.clients.auth.listAccounts({ emailContains: cmd.emailContains }, CALL));
  const rows = [];
  for (const account of accounts) {
    const balanceWhat = `reading the balance of account ${account.accountId}`;
    const { balance } = await call("billing", balanceWhat, () => ctx.clients.billing.getBalance({ accountId: account.accountId }, CALL));
    rows.push({
      account_id: account.accountId,
      email: account.email,
      role: roleText(account.role),
      disabled: account.disabled,
      created_at: isoTime(account.createdAtUnixMs),
      ...balanceJson(present(balance, "billing", balanceWhat)),
    });
  }
  return { accounts: rows };
}

export async function createKey(ctx: CommandContext, cmd: Extract<Command, { name: "keys create" }>): Promise<Out> {
  const what = `creating a key for account ${cmd.accountId}`;
  const expiresAt = cmd.expiresDays === null ? undefined : BigInt(ctx.now() + cmd.expiresDays * DAY_MS);
  const response = await call("auth", what, () =>
    ctx.clients.auth.createKey(
      {
        accountId: cmd.accountId,
        name: cmd.keyName,
        limitMicros: cmd.limitMicros ?? undefined,
        expiresAtUnixMs: expiresAt,
        models: cmd.models,
        requestsPerMinute: cmd.rpm ?? undefined,
      },
      CALL,
    ),
  );
  const key = present(response.key, "auth", what);
  return {
    key: response.secret,
    key_id: key.keyId,
    name: key.name,
    limit_usd: usdOrNull(key.limitMicros),
    expires_at: isoTime(key.expiresAtUnixMs),
    models: key.models,
    requests_per_minute: key.requestsPerMinute ?? null,
    note: "Shown once: store it now",
  };
}

export async function setAccountDisabled(
  ctx: CommandContext,
  cmd: Extract<Command, { name: "accounts disable" | "accounts enable" }>,
): Promise<Out> {
  const disabled = cmd.name === "accounts disable";
  const what = `${disabled ? "disabling" : "enabling"} account ${cmd.accountId}`;
  const response = await call("auth", what, () =>
    ctx.clients.auth.setAccountDisabled({ accountId: cmd.accountId, disabled }, CALL),
  );
  const account = present(response.account, "auth", what);
  return { account_id: account.accountId, email: account.email, role: roleText(account.role), disabled: account.disabled };
}

/** The limits as stored: null max_concurrent_jobs is the service default, null rpm no limit. */
function limitsJson(limits: AccountLimits | undefined): Out {
  return { max_concurrent_jobs: limits?.maxConcurrentJobs ?? "default", requests_per_minute: limits?.requestsPerMinute ?? null };
}

/** Reads the account, changes only the limits given on the command line, and prints the result. */
export async function setAccountLimits(ctx: CommandContext, cmd: Extract<Command, { name: "accounts limits" }>): Promise<Out> {
  const lookup = `looking up account ${cmd.accountId}`;
  const current = present((await call("auth", lookup, () => ctx.clients.auth.getAccount({ accountId: cmd.accountId }, CALL))).account, "auth", lookup);
  let account = current;
  if (cmd.maxConcurrent !== undefined || cmd.rpm !== undefined) {
    const pick = <T>(given: T | null | undefined, kept: T | undefined) => (given === undefined ? kept : (given ?? undefined));
    const limits = {
      maxConcurrentJobs: pick(cmd.maxConcurrent, current.limits?.maxConcurrentJobs),
      requestsPerMinute: pick(cmd.rpm, current.limits?.requestsPerMinute),
    };
    const what = `setting the limits of account ${cmd.accountId}`;
    account = present((await call("auth", what, () => ctx.clients.auth.setAccountLimits({ accountId: cmd.accountId, limits }, CALL))).account, "auth", what);
  }
  return { account_id: account.accountId, email: account.email, ...limitsJson(account.limits) };
}

/** A key as an operator sees it: everything but the secret, which auth never had in clear after creation. */
function keyJson(key: ApiKey): Out {
  return {
    key_id: key.keyId,
    name: key.name,
    prefix: key.prefix,
    limit_usd: usdOrNull(key.limitMicros),
    models: key.models,
    requests_per_minute: key.requestsPerMinute ?? null,
    created_at: isoTime(key.createdAtUnixMs),
    last_used_at: isoTime(key.lastUsedAtUnixMs),
    expires_at: isoTime(key.expiresAtUnixMs),
    revoked_at: isoTime(key.revokedAtUnixMs),
  };
}

export async function listKeys(ctx: CommandContext, cmd: Extract<Command, { name: "keys list" }>): Promise<Out> {
  const lookup = `looking up account ${cmd.accountId}`;
  // Auth answers an unknown account with an empty list; say "no such account" instead.
  present((await call("auth", lookup, () => ctx.clients.auth.getAccount({ accountId: cmd.accountId }, CALL))).account, "auth", lookup);
  const what = `listing the keys of account ${cmd.accountId}`;
  const response = await call("auth", what, () => ctx.clients.auth.listKeys({ accountId: cmd.accountId }, CALL));
  return { account_id: cmd.accountId, keys: response.keys.map(keyJson) };
}

export async function revokeKey(ctx: CommandContext, cmd: Extract<Command, { name: "keys revoke" }>): Promise<Out> {
  const what = `revoking key ${cmd.keyId} of account ${cmd.accountId}`;
  const response = await call("auth", what, () =>
    ctx.clients.auth.revokeKey({ accountId: cmd.accountId, keyId: cmd.keyId }, CALL),
  );
  return { account_id: cmd.accountId, ...keyJson(present(response.key, "auth", what)) };
}

export async function getCost(ctx: CommandContext, cmd: Extract<Command, { name: "cost" }>): Promise<Out> {
  const what = `looking up the cost of ${cmd.requestId}`;
  const response = await call("billing", what, () =>
    ctx.clients.billing.getCost({ requestId: cmd.requestId }, CALL),
  );
  return costJson(present(response.cost, "billing", what));
}

export async function listPrices(ctx: CommandContext): Promise<Out> {
  const response = await call("billing", "listing prices", () => ctx.clients.billing.listPrices({}, CALL));
  return { prices: response.prices.map(priceJson) };
}

export async function setPrice(ctx: CommandContext, cmd: Extract<Command, { name: "prices set" }>): Promise<Out> {
  const what = `setting the ${cmd.tier} price of ${cmd.model}`;
  const response = await call("billing", what, () =>
    ctx.clients.billing.setPrice(
      { model: cmd.model, tier: tierFromName(cmd.tier)!, priceMicros: cmd.priceMicros, free: cmd.free, create: cmd.create, actor: ctx.operator, note: cmd.note },
      CALL,
    ),
  );
  return {
    price: priceJson(present(response.price, "billing", what)),
    change: response.change ? priceChangeJson(response.change) : null,
    note: response.change ? "Applies to requests made from now on" : "Unchanged: that is already the price",
  };
}

export async function priceHistory(ctx: CommandContext, cmd: Extract<Command, { name: "prices history" }>): Promise<Out> {
  const response = await call("billing", "listing price changes", () =>
    ctx.clients.billing.listPriceChanges({ model: cmd.model ?? "", limit: 1000 }, CALL),
  );
  return { changes: response.changes.map(priceChangeJson) };
}

export async function replayLedger(ctx: CommandContext): Promise<Printed> {
  // A full replay reads every entry; give it longer than an ordinary call.
  const report = await call("billing", "replaying the ledger", () => ctx.clients.billing.replayLedger({}, { timeoutMs: 600_000 }));
  const out = replayJson(report);
  return new Printed(render(out), report.differences.length === 0 ? 0 : 1);
}

export async function statement(ctx: CommandContext, cmd: Extract<Command, { name: "ledger statement" }>): Promise<Out | Printed> {
  const what = `reading the statement of account ${cmd.accountId}`;
  present((await call("auth", what, () => ctx.clients.auth.getAccount({ accountId: cmd.accountId }, CALL))).account, "auth", what);
  const response = await call("billing", what, () =>
    ctx.clients.billing.getStatement(
      {
        accountId: cmd.accountId,
        fromUnixMs: cmd.from ? BigInt(cmd.from.getTime()) : undefined,
        toUnixMs: cmd.to ? BigInt(cmd.to.getTime()) : undefined,
      },
      { timeoutMs: 120_000 },
    ),
  );
  return cmd.csv ? new Printed(statementCsv(response)) : statementJson(response, cmd.from, cmd.to);
}

export function runCommand(ctx: CommandContext, cmd: Command): Promise<Out | Printed> {
  switch (cmd.name) {
    case "accounts create":
      return createAccount(ctx, cmd);
    case "accounts topup":
      return topUp(ctx, cmd);
    case "accounts show":
      return showAccount(ctx, cmd);
    case "accounts list":
      return listAccounts(ctx, cmd);
    case "accounts adjust":
      return adjustBalance(ctx, cmd);
    case "accounts disable":
    case "accounts enable":
      return setAccountDisabled(ctx, cmd);
    case "accounts limits":
      return setAccountLimits(ctx, cmd);
    case "keys create":
      return createKey(ctx, cmd);
    case "keys list":
      return listKeys(ctx, cmd);
    case "keys revoke":
      return revokeKey(ctx, cmd);
    case "cost":
      return getCost(ctx, cmd);
    case "prices list":
      return listPrices(ctx);
    case "prices set":
      return setPrice(ctx, cmd);
    case "prices history":
      return priceHistory(ctx, cmd);
    case "ledger replay":
      return replayLedger(ctx);
    case "ledger statement":
      return statement(ctx, cmd);
    case "webhooks create":
      return createWebhook(ctx, cmd);
    case "webhooks list":
      return listWebhooks(ctx, cmd);
    case "webhooks delete":
      return deleteWebhook(ctx, cmd);
    case "channels list":
      return listChannels(ctx, cmd);
    case "channels reset":
      return resetChannel(ctx, cmd);
  }
}
