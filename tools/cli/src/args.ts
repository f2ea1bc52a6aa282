import { parseArgs } from "node:util";
import { TIER_NAMES, TIMESTAMP_RANGE_TEXT, isRequestId, isSupportedTimestamp, usdToMicros, type TierName } from "@orvado/core";
import { GROUPS, globalUsage, groupUsage, type Group } from "./usage.ts";

export type Command =
  | { name: "accounts create"; email: string; password: string; admin: boolean }
  | { name: "accounts topup"; accountId: string; amountMicros: bigint; note: string }
  /** By id, or by exact email when only --email is given. */
  | { name: "accounts show"; accountId: string; email?: undefined }
  | { name: "accounts show"; accountId?: undefined; email: string }
  | { name: "accounts list"; emailContains: string }
  | { name: "accounts adjust"; accountId: string; amountMicros: bigint; note: string }
  | { name: "accounts disable" | "accounts enable"; accountId: string }
  /** undefined: keep the current value; null: back to the default (the service's concurrency, no rpm). */
  | { name: "accounts limits"; accountId: string; maxConcurrent: number | null | undefined; rpm: number | null | undefined }
  | {
      name: "keys create";
      accountId: string;
      keyName: string;
      limitMicros: bigint | null;
      expiresDays: number | null;
      models: string[];
      rpm: number | null;
    }
  | { name: "keys list"; accountId: string }
  | { name: "keys revoke"; accountId: string; keyId: string }
  | { name: "cost"; requestId: string }
  | { name: "prices list" }
  | { name: "prices set"; model: string; tier: TierName; priceMicros: bigint; free: boolean; create: boolean; note: string }
  | { name: "prices history"; model: string | null }
  | { name: "ledger replay" }
  | { name: "channels list"; hours: number }
  | { name: "channels reset"; model: string; channel: string }
  | { name: "ledger statement"; accountId: string; from: Date | null; to: Date | null; csv: boolean }
  | { name: "webhooks create"; accountId: string; url: string; events: string[] }
  | { name: "webhooks list"; accountId: string }
  | { name: "webhooks delete"; endpointId: string };

export type Parsed =
  | { kind: "run"; command: Command }
  | { kind: "help"; text: string }
  // message is one line, without the "orvado: " prefix, ending in a --help hint.
  | { kind: "error"; message: string };

type OptionKind = "string" | "boolean";

interface Spec {
  options: Record<string, OptionKind>;
  /** Names of the positional arguments, all required. */
  positionals: string[];
}

const SUBCOMMANDS: Record<Group, Record<string, Spec>> = {
  accounts: {
    create: { options: { email: "string", password: "string", admin: "boolean" }, positionals: [] },
    topup: { options: { account: "string", usd: "string", note: "string" }, positionals: [] },
    show: { options: { account: "string", email: "string" }, positionals: [] },
    list: { options: { email: "string" }, positionals: [] },
    adjust: { options: { account: "string", usd: "string", note: "string" }, positionals: [] },
    disable: { options: { account: "string" }, positionals: [] },
    enable: { options: { account: "string" }, positionals: [] },
    limits: { options: { account: "string", "max-concurrent": "string", rpm: "string" }, positionals: [] },
  },
  keys: {
    create: {
      options: { account: "string", name: "string", "limit-usd": "string", "expires-days": "string", models: "string", rpm: "string" },
      positionals: [],
    },
    list: { options: { account: "string" }, positionals: [] },
    revoke: { options: { account: "string", key: "string" }, positionals: [] },
  },
  // Groups with a single action take it without a subcommand word.
  cost: { "": { options: {}, positionals: ["request_id"] } },
  prices: {
    list: { options: {}, positionals: [] },
    set: { options: { model: "string", tier: "string", usd: "string", free: "boolean", create: "boolean", note: "string" }, positionals: [] },
    history: { options: { model: "string" }, positionals: [] },
  },
  channels: {
    list: { options: { hours: "string" }, positionals: [] },
    reset: { options: { model: "string", channel: "string" }, positionals: [] },
  },
  ledger: {
    replay: { options: {}, positionals: [] },
    statement: { options: { account: "string", from: "string", to: "string", csv: "boolean" }, positionals: [] },
  },
  webhooks: {
    create: { options: { account: "string", url: "string", events: "string" }, positionals: [] },
    list: { options: { account: "string" }, positionals: [] },
    delete: { options: { id: "string" }, positionals: [] },
  },
};

const MAX_EXPIRES_DAYS = 3650;
// The ranges auth accepts (services/auth/src/input.ts); checked here too for a one-line message.
const MAX_CONCURRENT_JOBS = 100_000;
const MAX_RPM = 1_000_000;
const MAX_TEXT = 500;
/** The window generation's channel statistics take (GetChannelStats). */
const MAX_CHANNEL_HOURS = 720;

class ArgError extends Error {}

const isHelp = (arg: string) => arg === "--help" || arg === "-h";

export function parseCommandLine(argv: string[]): Parsed {
  const [first, ...rest] = argv;
  if (first === undefined) return error("missing command", null);
  if (isHelp(first) || first === "help") return helpFor(rest[0]);
  if (!(GROUPS as readonly string[]).includes(first)) {
    return error(first.startsWith("-") ? `unknown option ${first}` : `unknown command '${first}'`, null);
  }
  const group = first as Group;
  const actions = SUBCOMMANDS[group];
  let action = "";
  let args = rest;
  if (!Object.hasOwn(actions, "")) {
    const [sub, ...more] = rest;
    if (sub === undefined || sub.startsWith("-")) {
      if (sub !== undefined && isHelp(sub)) return { kind: "help", text: groupUsage(group) };
      return error(`'${group}' needs one of: ${Object.keys(actions).join(", ")}`, group);
    }
    // Own keys only: `orvado keys constructor` names no command.
    if (!Object.hasOwn(actions, sub)) return error(`unknown command '${group} ${sub}'`, group);
    action = sub;
    args = more;
  }
  // Help wins over any other mistake on the line, so a half-typed command can still ask for it.
  const terminator = args.indexOf("--");
  if ((terminator === -1 ? args : args.slice(0, terminator)).some(isHelp)) {
    return { kind: "help", text: groupUsage(group) };
  }
  try {
    const values = readOptions(args, actions[action]!, `${group}${action ? ` ${action}` : ""}`);
    return { kind: "run", command: build(group, action, values) };
  } catch (caught) {
    if (caught instanceof ArgError) return error(caught.message, group);
    throw caught;
  }
}

function helpFor(group: string | undefined): Parsed {
  if (group === undefined) return { kind: "help", text: globalUsage() };
  if ((GROUPS as readonly string[]).includes(group)) return { kind: "help", text: groupUsage(group as Group) };
  return error(`unknown command '${group}'`, null);
}

function error(message: string, group: Group | null): Parsed {
  return { kind: "error", message: `${message} (see 'orvado ${group ? `${group} ` : ""}--help')` };
}

interface Values {
  options: Map<string, string | true>;
  positionals: string[];
}

/**
 * parseArgs in strict mode reports mistakes as multi-line messages and refuses
 * `--usd -1`; reading its tokens lets every mistake become one clear line and a
 * negative amount reach the amount check.
 */
function readOptions(args: string[], spec: Spec, command: string): Values {
  const config = Object.fromEntries(Object.entries(spec.options).map(([name, type]) => [name, { type }]));
  const { tokens } = parseArgs({ args, options: config, strict: false, allowPositionals: true, tokens: true });
  const options = new Map<string, string | true>();
  const positionals: string[] = [];
  for (const token of tokens) {
    if (token.kind === "positional") positionals.push(token.value);
    if (token.kind !== "option") continue;
    const kind = Object.hasOwn(spec.options, token.name) ? spec.options[token.name] : undefined;
    // Only long options exist: "-a" must not quietly mean something.
    if (kind === undefined || !token.rawName.startsWith("--")) {
      throw new ArgError(`unknown option ${token.rawName} for '${command}'`);
    }
    if (options.has(token.name)) throw new ArgError(`--${token.name} is given more than once`);
    if (kind === "boolean") {
      if (token.value !== undefined) throw new ArgError(`--${token.name} takes no value`);
      options.set(token.name, true);
      continue;
    }
    const value = token.value;
    // "--name --admin" means the value was forgotten, not a name starting with dashes.
    const swallowedOption = !token.inlineValue && value?.startsWith("--") && Object.hasOwn(spec.options, value.slice(2));
    if (value === undefined || swallowedOption) throw new ArgError(`--${token.name} needs a value`);
    options.set(token.name, value);
  }
  if (positionals.length > spec.positionals.length) {
    throw new ArgError(`unexpected argument '${positionals[spec.positionals.length]}' for '${command}'`);
  }
  const missing = spec.positionals[positionals.length];
  if (missing !== undefined) throw new ArgError(`'${command}' needs <${missing}>`);
  return { options, positionals };
}

function build(group: Group, action: string, values: Values): Command {
  const text = (name: string) => {
    const value = values.options.get(name);
    if (value === undefined) return undefined;
    if (typeof value !== "string" || value.trim() === "") throw new ArgError(`--${name} needs a value`);
    if (value.length > MAX_TEXT) throw new ArgError(`--${name} is longer than ${MAX_TEXT} characters`);
    return value;
  };
  const required = (name: string) => {
    const value = text(name);
    if (value === undefined) throw new ArgError(`--${name} is required`);
    return value;
  };
  switch (`${group} ${action}`) {
    case "accounts create":
      return {
        name: "accounts create",
        email: email(required("email")),
        password: required("password"),
        admin: values.options.get("admin") === true,
      };
    case "accounts topup": {
      const amountMicros = usd("usd", required("usd"));
      if (amountMicros === 0n) throw new ArgError("--usd must be more than 0");
      return { name: "accounts topup", accountId: required("account").trim(), amountMicros, note: text("note") ?? "" };
    }
    case "accounts show": {
      const account = text("account");
      const email = text("email");
      if ((account === undefined) === (email === undefined)) throw new ArgError("give one of --account or --email");
      return account !== undefined ? { name: "accounts show", accountId: account.trim() } : { name: "accounts show", email: email!.trim() };
    }
    case "accounts list":
      return { name: "accounts list", emailContains: text("email")?.trim() ?? "" };
    case "accounts adjust": {
      const amount = required("usd").trim();
      const negative = amount.startsWith("-");
      const size = usd("usd", negative ? amount.slice(1) : amount);
      if (size === 0n) throw new ArgError("--usd must not be 0");
      return { name: "accounts adjust", accountId: required("account").trim(), amountMicros: negative ? -size : size, note: required("note") };
    }
    case "accounts disable":
    case "accounts enable":
      return { name: `accounts ${action}` as "accounts disable" | "accounts enable", accountId: required("account").trim() };
    case "accounts limits": {
      const max = text("max-concurrent");
      const rpm = text("rpm");
      return {
        name: "accounts limits",
        accountId: required("account").trim(),
        maxConcurrent: max === undefined ? undefined : max.trim() === "default" ? null : wholeNumber("max-concurrent", max, 0, MAX_CONCURRENT_JOBS),
        rpm: rpm === undefined ? undefined : rpmArg(rpm),
      };
    }
    case "keys list":
      return { name: "keys list", accountId: required("account").trim() };
    case "keys revoke":
      return { name: "keys revoke", accountId: required("account").trim(), keyId: required("key").trim() };
    case "keys create": {
      const limit = text("limit-usd");
      const days = text("expires-days");
      const models = text("models");
      const rpmText = text("rpm");
      return {
        name: "keys create",
        accountId: required("account").trim(),
        keyName: text("name") ?? "",
        limitMicros: limit === undefined ? null : usd("limit-usd", limit),
        expiresDays: days === undefined ? null : expiresDays(days),
        models: models === undefined ? [] : modelList(models),
        rpm: rpmText === undefined ? null : rpmArg(rpmText),
      };
    }
    case "cost ": {
      const requestId = values.positionals[0]!;
      if (!isRequestId(requestId)) {
        throw new ArgError(`'${requestId}' is not a request id (req_ followed by 22 characters)`);
      }
      return { name: "cost", requestId };
    }
    case "prices list":
      return { name: "prices list" };
    case "prices set": {
      const priceMicros = usd("usd", required("usd"));
      const free = values.options.get("free") === true;
      // Billing refuses these too; saying it here names the flag.
      if (priceMicros === 0n && !free) throw new ArgError("--usd 0 makes the model free: add --free to confirm");
      if (priceMicros !== 0n && free) throw new ArgError("--free is only for --usd 0");
      const create = values.options.get("create") === true;
      return { name: "prices set", model: required("model").trim(), tier: tier(required("tier")), priceMicros, free, create, note: text("note") ?? "" };
    }
    case "prices history":
      return { name: "prices history", model: text("model")?.trim() ?? null };
    case "ledger replay":
      return { name: "ledger replay" };
    case "channels list": {
      const hours = text("hours");
      return { name: "channels list", hours: hours === undefined ? 24 : wholeNumber("hours", hours, 1, MAX_CHANNEL_HOURS) };
    }
    case "channels reset":
      return { name: "channels reset", model: required("model").trim(), channel: required("channel").trim() };
    case "ledger statement": {
      const fromText = text("from");
      const toText = text("to");
      const from = fromText === undefined ? null : dateArg("from", fromText, "start");
      const to = toText === undefined ? null : dateArg("to", toText, "end");
      if (from && to && from >= to) throw new ArgError("--from must be before --to");
      return { name: "ledger statement", accountId: required("account").trim(), from, to, csv: values.options.get("csv") === true };
    }
    case "webhooks create": {
      const events = text("events");
      // Generation checks the URL (public address, no credentials) and the event types; it names what is wrong.
      return { name: "webhooks create", accountId: required("account").trim(), url: required("url").trim(), events: events === undefined ? [] : eventList(events) };
    }
    case "webhooks list":
      return { name: "webhooks list", accountId: required("account").trim() };
    case "webhooks delete":
      return { name: "webhooks delete", endpointId: required("id").trim() };
  }
  throw new Error(`no builder for '${group} ${action}'`);
}

function usd(flag: string, text: string): bigint {
  const micros = usdToMicros(text);
  if (micros === null) {
    throw new ArgError(`--${flag} must be a non-negative USD amount with at most 6 decimals, like 12.50 (got '${text}')`);
  }
  return micros;
}

function tier(text: string): TierName {
  const name = text.trim().toUpperCase();
  if (!(TIER_NAMES as readonly string[]).includes(name)) throw new ArgError(`--tier must be one of ${TIER_NAMES.join(", ")} (got '${text}')`);
  return name as TierName;
}

const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/;

/**
 * A date (YYYY-MM-DD, a whole UTC day) or an ISO timestamp. A date given to --to
 * includes that whole day, so "--from 2026-11-01 --to 2026-11-30" is all of November.
 */
function dateArg(flag: string, text: string, edge: "start" | "end"): Date {
  const trimmed = text.trim();
  const date = new Date(DATE_ONLY.test(trimmed) ? `${trimmed}T00:00:00Z` : trimmed);
  if (!isSupportedTimestamp(date.getTime()) || (DATE_ONLY.test(trimmed) && date.toISOString().slice(0, 10) !== trimmed)) {
    throw new ArgError(`--${flag} must be a date like 2026-11-01 or an ISO time like 2026-11-01T12:00:00Z, ${TIMESTAMP_RANGE_TEXT} (got '${text}')`);
  }
  return DATE_ONLY.test(trimmed) && edge === "end" ? new Date(date.getTime() + 86_400_000) : date;
}

function email(text: string): string {
  const trimmed = text.trim();
  // Auth owns the real rules; this only catches a value typed into the wrong flag.
  if (!/^[^\s@]+@[^\s@]+$/.test(trimmed)) throw new ArgError(`--email must be an email address (got '${text}')`);
  return trimmed;
}

function expiresDays(text: string): number {
  const days = /^\d+$/.test(text.trim()) ? Number(text.trim()) : NaN;
  if (!Number.isSafeInteger(days) || days < 1 || days > MAX_EXPIRES_DAYS) {
    throw new ArgError(`--expires-days must be a whole number of days from 1 to ${MAX_EXPIRES_DAYS} (got '${text}')`);
  }
  return days;
}

function wholeNumber(flag: string, text: string, min: number, max: number): number {
  const value = /^\d+$/.test(text.trim()) ? Number(text.trim()) : NaN;
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    throw new ArgError(`--${flag} must be a whole number from ${min} to ${max} (got '${text}')`);
  }
  return value;
}

/** Requests per minute; 0 means no limit. */
function rpmArg(text: string): number | null {
  const value = wholeNumber("rpm", text, 0, MAX_RPM);
  return value === 0 ? null : value;
}

function eventList(text: string): string[] {
  const events = text.split(",").map((event) => event.trim());
  if (events.some((event) => event === "")) {
    throw new ArgError(`--events must be event types separated by commas, like image.generation.succeeded,image.generation.failed (got '${text}')`);
  }
  return [...new Set(events)];
}

function modelList(text: string): string[] {
  const models = text.split(",").map((model) => model.trim());
  if (models.some((model) => model === "")) {
    throw new ArgError(`--models must be model ids separated by commas, like m1,m2 (got '${text}')`);
  }
  return [...new Set(models)];
}
