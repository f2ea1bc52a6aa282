import { OUT_OF_RANGE_TIMES, QUERY_NUMBER_EDGES, INTEGER_EDGES, illFormedText, prototypeName, type HttpCase, type Random } from "./fuzz-support.ts";

// Hostile requests to the console API (docs/console.md) for the fuzz test, sent
// with a live session: out-of-range dates and odd numbers in query strings and
// cursors, prototype names and unpaired surrogates in every string field, integer
// edges in every number. Each case carries a defect, so any 2xx is a bug.

export interface ConsoleSession {
  cookie: string;
  csrfToken: string;
}

export interface ConsoleSessions {
  user: ConsoleSession;
  admin: ConsoleSession;
  /** The fuzz account: admin cases aim at it, so a wrongly accepted top-up shows in its balance. */
  accountId: string;
  /** A /v1 body with one defect, from the /v1 generator (the playground takes the same fields). */
  invalidImageBody: () => Record<string, unknown>;
}

const q = encodeURIComponent;

/** The integer edges that are numbers: a USD amount must be a string, so each is wrong (some strings, "1", would be right). */
const numberEdges = INTEGER_EDGES.filter((edge) => typeof edge === "number");

/** A cursor as billing would encode one, around a time or text it never gave. */
function forgedCursor(random: Random): string {
  const time = random.pick([...OUT_OF_RANGE_TIMES, prototypeName(random), illFormedText(random)]);
  const requestId = random.pick(["req_AAAAAAAAAAAAAAAAAAAAAA", prototypeName(random), ""]);
  return random.pick([Buffer.from(`${time}|${requestId}`).toString("base64url"), prototypeName(random), "%", "x".repeat(600)]);
}

function userQueryCase(random: Random): { label: string; path: string } {
  const choices: (() => { label: string; path: string })[] = [
    () => {
      const field = random.pick(["from", "to"]);
      return { label: `usage ${field} out of range`, path: `${random.pick(["/usage", "/usage.csv"])}?${field}=${q(random.pick(OUT_OF_RANGE_TIMES))}` };
    },
    () => ({ label: "usage limit edge", path: `/usage?limit=${q(random.pick(QUERY_NUMBER_EDGES))}` }),
    () => ({ label: "spend days edge", path: `/spend?days=${q(random.pick(QUERY_NUMBER_EDGES))}` }),
    () => ({ label: "forged cursor", path: `/usage?cursor=${q(forgedCursor(random))}` }),
    // A surrogate's code unit spelled in UTF-8 bytes (CESU-8), which no UTF-8 decoder accepts; limit=0 is the defect.
    () => ({ label: "usage filter with surrogate bytes", path: `/usage?${random.pick(["keyId", "model", "from"])}=a%ED%A0%80b&limit=0` }),
    () => ({ label: "usage of a prototype name", path: `/usage/${q(prototypeName(random))}` }),
  ];
  return random.pick(choices)();
}

function userBodyCase(random: Random, sessions: ConsoleSessions): { label: string; method: string; path: string; body: unknown } {
  const choices: (() => { label: string; method: string; path: string; body: unknown })[] = [
    () => ({ label: "playground with a defect", method: "POST", path: "/playground", body: sessions.invalidImageBody() }),
    () => ({ label: "key name with a surrogate", method: "POST", path: "/keys", body: { name: illFormedText(random) } }),
    () => ({ label: "key for a prototype-named model", method: "POST", path: "/keys", body: { name: "fuzz", models: [prototypeName(random)] } }),
    () => ({ label: "key expiring out of range", method: "POST", path: "/keys", body: { name: "fuzz", expiresAt: random.pick(OUT_OF_RANGE_TIMES) } }),
    () => ({ label: "key limit not an amount", method: "POST", path: "/keys", body: { name: "fuzz", limitUsd: random.pick([prototypeName(random), "1e300", ...numberEdges]) } }),
    () => ({ label: "password change with a surrogate", method: "POST", path: "/password", body: { currentPassword: illFormedText(random), newPassword: "another password" } }),
  ];
  return random.pick(choices)();
}

function adminBodyCase(random: Random, accountId: string): { label: string; method: string; path: string; body: unknown } {
  const choices: (() => { label: string; method: string; path: string; body: unknown })[] = [
    () => ({ label: "top-up not an amount", method: "POST", path: `/admin/accounts/${accountId}/topup`, body: { usd: random.pick([prototypeName(random), illFormedText(random), "1e300", "0x10", "NaN", ...numberEdges]) } }),
    () => ({ label: "top-up of a prototype-named account", method: "POST", path: `/admin/accounts/${q(prototypeName(random))}/topup`, body: { usd: "1.00" } }),
    () => ({ label: "price for a prototype-named tier", method: "PUT", path: "/admin/prices", body: { model: "beta", tier: prototypeName(random), usd: "0.04" } }),
    () => ({ label: "account with a surrogate", method: "POST", path: "/admin/accounts", body: { email: `${illFormedText(random)}@example.test`, password: "long enough password" } }),
  ];
  return random.pick(choices)();
}

export function consoleCase(random: Random, sessions: ConsoleSessions): HttpCase {
  const asAdmin = random.chance(0.2);
  const session = asAdmin ? sessions.admin : sessions.user;
  const headers: Record<string, string> = { cookie: session.cookie, "x-csrf-token": session.csrfToken };
  if (!asAdmin && random.chance(0.4)) {
    const { label, path } = userQueryCase(random);
    return { kind: "http", label: `console: ${label}`, method: "GET", path: `/console/api${path}`, headers };
  }
  const { label, method, path, body } = asAdmin ? adminBodyCase(random, sessions.accountId) : userBodyCase(random, sessions);
  headers["content-type"] = "application/json";
  return { kind: "http", label: `console: ${label}`, method, path: `/console/api${path}`, headers, body: JSON.stringify(body) };
}
