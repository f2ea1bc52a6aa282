import { isPlaygroundKeyId, microsToUsd, tierName } from "@orvado/core";
import { CostStatus, Role, Tier, type Account, type ApiKey, type Balance, type CostRecord, type KeySpend, type Model } from "@orvado/proto";

// The console API's JSON shapes (docs/console.md). Money: USD strings with 6 places
// beside integer micros; times: ISO 8601 UTC strings.

export const iso = (unixMs: bigint | undefined) => (unixMs === undefined ? null : new Date(Number(unixMs)).toISOString());

export const roleName = (role: Role) => (role === Role.ADMIN ? "admin" : "user");

export function accountJson(account: Account) {
  return {
    id: account.accountId,
    email: account.email,
    role: roleName(account.role),
    disabled: account.disabled,
    limits: limitsJson(account),
    // Still the password generated at first start: the console asks for a new one.
    passwordGenerated: account.passwordGenerated,
  };
}

/** maxConcurrentJobs null: the service's default applies; requestsPerMinute null: no limit. */
export function limitsJson(account: Account) {
  return { maxConcurrentJobs: account.limits?.maxConcurrentJobs ?? null, requestsPerMinute: account.limits?.requestsPerMinute ?? null };
}

export function balanceJson(balance: Balance | undefined) {
  const balanceMicros = balance?.balanceMicros ?? 0n;
  const heldMicros = balance?.heldMicros ?? 0n;
  const availableMicros = balance?.availableMicros ?? 0n;
  return {
    balanceUsd: microsToUsd(balanceMicros),
    heldUsd: microsToUsd(heldMicros),
    availableUsd: microsToUsd(availableMicros),
    balanceMicros: Number(balanceMicros),
    heldMicros: Number(heldMicros),
    availableMicros: Number(availableMicros),
  };
}

export function keyJson(key: ApiKey, spend: KeySpend | undefined) {
  return {
    id: key.keyId,
    name: key.name,
    prefix: key.prefix,
    createdAt: iso(key.createdAtUnixMs),
    lastUsedAt: iso(key.lastUsedAtUnixMs),
    expiresAt: iso(key.expiresAtUnixMs),
    revokedAt: iso(key.revokedAtUnixMs),
    limitUsd: key.limitMicros === undefined ? null : microsToUsd(key.limitMicros),
    spentUsd: microsToUsd(spend?.capturedMicros ?? 0n),
    heldUsd: microsToUsd(spend?.heldMicros ?? 0n),
    models: key.models,
  };
}

const STATUS: Record<CostStatus, "pending" | "charged" | "not_charged"> = {
  [CostStatus.UNSPECIFIED]: "pending",
  [CostStatus.PENDING]: "pending",
  [CostStatus.CHARGED]: "charged",
  [CostStatus.NOT_CHARGED]: "not_charged",
};


export function usageRow(cost: CostRecord, keyNames: ReadonlyMap<string, string>) {
  return {
    requestId: cost.requestId,
    createdAt: iso(cost.createdAtUnixMs),
    settledAt: iso(cost.settledAtUnixMs),
    model: cost.model,
    size: cost.size,
    tier: cost.tier === Tier.TIER_UNSPECIFIED ? null : tierName(cost.tier),
    status: STATUS[cost.status],
    imagesRequested: cost.imagesRequested,
    imagesDelivered: cost.imagesDelivered,
    amountUsd: microsToUsd(cost.amountMicros),
    amountMicros: Number(cost.amountMicros),
    keyId: cost.keyId,
    keyName: keyNames.get(cost.keyId) ?? (isPlaygroundKeyId(cost.keyId) ? "console playground" : null),
    /** The end-user id the request carried (OpenAI's `user`), or null. */
    user: cost.user || null,
  };
}

export type UsageRow = ReturnType<typeof usageRow>;

/** What every console page shows of a catalog model (the admin page adds channel health, /models the prices). */
export function modelJson(model: Model) {
  return { id: model.id, aliases: model.aliases, family: model.family, tiers: model.tiers.map(tierName), edits: model.edits, sandbox: model.sandbox };
}
