import { microsToUsd } from "@orvado/core";
import {
  CostStatus,
  Role,
  Tier,
  type Balance,
  type CostRecord,
  type GetStatementResponse,
  type Price,
  type PriceChange,
  type ReplayLedgerResponse,
} from "@orvado/proto";

// JSON has no int64, so amounts leave as strings: micros exact, USD with 6 places.

export type Json = string | number | boolean | null | Json[] | { [key: string]: Json };

const TIERS: Record<Tier, string> = {
  [Tier.TIER_UNSPECIFIED]: "unspecified",
  [Tier.TIER_1K]: "1K",
  [Tier.TIER_2K]: "2K",
  [Tier.TIER_4K]: "4K",
};

const STATUSES: Record<CostStatus, string> = {
  [CostStatus.UNSPECIFIED]: "unspecified",
  [CostStatus.PENDING]: "pending",
  [CostStatus.CHARGED]: "charged",
  [CostStatus.NOT_CHARGED]: "not_charged",
};

const ROLES: Record<Role, string> = {
  [Role.UNSPECIFIED]: "unspecified",
  [Role.USER]: "user",
  [Role.ADMIN]: "admin",
};

// A newer service may send an enum value this build does not know; show its number.
export const tierText = (tier: Tier) => TIERS[tier] ?? `tier_${tier}`;
export const statusText = (status: CostStatus) => STATUSES[status] ?? `status_${status}`;
export const roleText = (role: Role) => ROLES[role] ?? `role_${role}`;

const MAX_DATE_MS = 8_640_000_000_000_000n;

/** ISO 8601 for a unix-ms timestamp; null when absent. */
export function isoTime(unixMs: bigint | undefined): string | null {
  if (unixMs === undefined) return null;
  // Date cannot hold every int64; the raw number beats a crash for a corrupt value.
  if (unixMs > MAX_DATE_MS || unixMs < -MAX_DATE_MS) return unixMs.toString();
  return new Date(Number(unixMs)).toISOString();
}

export function usdOrNull(micros: bigint | undefined): string | null {
  return micros === undefined ? null : microsToUsd(micros);
}

export function balanceJson(balance: Balance): { [key: string]: Json } {
  return {
    balance_usd: microsToUsd(balance.balanceMicros),
    held_usd: microsToUsd(balance.heldMicros),
    available_usd: microsToUsd(balance.availableMicros),
    balance_micros: balance.balanceMicros.toString(),
    held_micros: balance.heldMicros.toString(),
    available_micros: balance.availableMicros.toString(),
  };
}

export function costJson(cost: CostRecord): { [key: string]: Json } {
  return {
    request_id: cost.requestId,
    status: statusText(cost.status),
    model: cost.model,
    size: cost.size,
    tier: tierText(cost.tier),
    images_requested: cost.imagesRequested,
    images_delivered: cost.imagesDelivered,
    amount_usd: microsToUsd(cost.amountMicros),
    amount_micros: cost.amountMicros.toString(),
    unit_price_usd: microsToUsd(cost.unitPriceMicros),
    created_at: isoTime(cost.createdAtUnixMs),
    settled_at: isoTime(cost.settledAtUnixMs),
  };
}

export function priceJson(price: Price): { [key: string]: Json } {
  return {
    model: price.model,
    tier: tierText(price.tier),
    usd: microsToUsd(price.priceMicros),
    micros: price.priceMicros.toString(),
  };
}

export function priceChangeJson(change: PriceChange): { [key: string]: Json } {
  return {
    change_id: change.changeId.toString(),
    model: change.model,
    tier: tierText(change.tier),
    old_usd: usdOrNull(change.oldPriceMicros),
    new_usd: microsToUsd(change.newPriceMicros),
    actor: change.actor,
    note: change.note,
    changed_at: isoTime(change.changedAtUnixMs),
  };
}

export function replayJson(report: ReplayLedgerResponse): { [key: string]: Json } {
  return {
    result: report.differences.length === 0 ? "projections match the ledger" : "DIFFERENCES FOUND",
    entries_read: report.entriesRead.toString(),
    accounts_checked: report.accountsChecked,
    keys_checked: report.keysChecked,
    requests_checked: report.requestsChecked,
    differences: report.differences.map((d) => ({
      projection: d.projection,
      id: d.id,
      field: d.field,
      live_micros: d.live.toString(),
      replayed_micros: d.replayed.toString(),
    })),
  };
}

const STATEMENT_COLUMNS = ["entry_id", "time", "kind", "request_id", "key_id", "amount_usd", "balance_after_usd", "held_after_usd", "reason"];

function statementRows(statement: GetStatementResponse): string[][] {
  return statement.entries.map((entry) => [
    entry.entryId.toString(),
    isoTime(entry.createdAtUnixMs) ?? "",
    entry.kind,
    entry.requestId,
    entry.keyId,
    microsToUsd(entry.amountMicros),
    microsToUsd(entry.balanceAfterMicros),
    microsToUsd(entry.heldAfterMicros),
    entry.reason,
  ]);
}

export function statementJson(statement: GetStatementResponse, from: Date | null, to: Date | null): { [key: string]: Json } {
  return {
    account_id: statement.accountId,
    from: from?.toISOString() ?? null,
    to: to?.toISOString() ?? null,
    opening_balance_usd: microsToUsd(statement.openingBalanceMicros),
    opening_held_usd: microsToUsd(statement.openingHeldMicros),
    entries: statementRows(statement).map((row) => Object.fromEntries(row.map((value, index) => [STATEMENT_COLUMNS[index]!, value]))),
    closing_balance_usd: microsToUsd(statement.closingBalanceMicros),
    closing_held_usd: microsToUsd(statement.closingHeldMicros),
  };
}

/** RFC 4180: quote every field that needs it; a leading = + - @ is prefixed so spreadsheets do not run it as a formula. */
export function csvField(value: string): string {
  const safe = /^[=+\-@\t\r]/.test(value) && !/^-?\d+(\.\d+)?$/.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(safe) ? `"${safe.replaceAll('"', '""')}"` : safe;
}

export function statementCsv(statement: GetStatementResponse): string {
  return [STATEMENT_COLUMNS, ...statementRows(statement)].map((row) => row.map(csvField).join(",")).join("\r\n") + "\r\n";
}

/** What the CLI prints: one JSON object, indented for people, parseable by jq. */
export function render(value: { [key: string]: Json }): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}
