import { randomInt } from "node:crypto";
import { Agent, request as httpRequest, type IncomingHttpHeaders } from "node:http";
import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AuthService, BillingService } from "@orvado/proto";
import { internalClient } from "@orvado/rpc";
import { startTestStack, TEST_ADMIN, type TestStack } from "./harness.ts";
import { signedIn } from "./console-browser.ts";
import { consoleCase, type ConsoleSession, type ConsoleSessions } from "./fuzz-console-cases.ts";
import { INTEGER_EDGES, Random, illFormedText, prototypeName, type FuzzCase, type HttpCase, type RawCase } from "./fuzz-support.ts";

// Hostile input against a real running edge (issue E, item 5; issue G, item 13):
// malformed and odd requests from a seeded generator, to /v1 and, with live
// sessions of a user and the admin, to the console API (fuzz-console-cases.ts).
// The hostile values are in fuzz-support.ts and listed in docs/reliability.md. Every answer must be a 4xx in the documented error
// shape (2.6) with an x-request-id, never a 5xx or a dropped connection, and nothing
// may be charged. Each case carries at least one defect that makes it invalid, so a
// 200 is always a bug. FUZZ_COUNT sets the number of cases, FUZZ_SEED replays a run.

const COUNT = Number(process.env.FUZZ_COUNT ?? 10_000);
const SEED = Number(process.env.FUZZ_SEED ?? randomInt(2 ** 31));
const PARALLEL = 16;
const REQUEST_ID_IN_MESSAGE = /\(request id: (req_[A-Za-z0-9_-]+)\)$/;

const MODELS = ["beta", "beta-2.1", "beta-pro", "beta-2-lite", "alpha-2.5-flare", "alpha-2.5-sunburst"];
const BAD_SIZES = [
  "0x0", "-1x5", "99999x1", "1e3x1e3", "", " ", "x", "1024x", "x1024", "1024*1024", "1024x1024x1", "0x1024", "63x63", "4097x4097",
  "NaNxNaN", "Infinityx1", "1024 x 1024", "１０２４x１０２４", "1024x1024\u0000", "8k", "0k", "auto2", "0x1", "1x0", "-0x-0",
  "1024.5x1024", "0x10x10", "99999999999999999999x1", "🎨x🎨",
];
const BAD_N = [...INTEGER_EDGES, true, [], {}, 1e9, 11];
const WRONG_TYPES = [1, 0, -1, true, false, [], ["beta"], {}, { a: 1 }, 1.5];
const CONTENT_TYPES = [
  "application/json", "application/json; charset=utf-8", "Application/JSON", "text/plain", "application/x-www-form-urlencoded",
  "multipart/form-data; boundary=xyz", "application/jsonx", "application/json; charset=latin1", "*/*", "garbage", "image/png", "",
];

function validBody(random: Random): Record<string, unknown> {
  const body: Record<string, unknown> = { model: random.pick(MODELS), prompt: random.text(40) || "a fox" };
  if (random.chance(0.5)) body.size = random.pick(["1024x1024", "1536x1024", "auto", "1k", "2k"]);
  if (random.chance(0.3)) body.response_format = random.pick(["url", "b64_json"]);
  if (random.chance(0.2)) body.n = 1;
  return body;
}

/** Harmless oddities first (unicode prompts, nulls, long prompts); the defect comes after them. */
function addNoise(random: Random, body: Record<string, unknown>) {
  if (random.chance(0.3)) body.prompt = random.text(2000);
  if (random.chance(0.1)) body.prompt = "x".repeat(random.pick([100_000, 300_000, 1_048_576]));
  if (random.chance(0.2)) body.quality = null;
  if (random.chance(0.1)) body.size = null;
}

/** One defect that makes the body invalid whatever else it holds. */
function addDefect(random: Random, body: Record<string, unknown>): string {
  const field = random.pick(["model", "prompt", "size", "quality", "response_format"]);
  const defects: (() => string)[] = [
    () => ((body.size = random.pick(BAD_SIZES)), `size ${JSON.stringify(body.size)}`),
    () => ((body.model = `no-such-model-${random.text(12)}`), "unknown model"),
    () => ((body[`zz_unknown_${random.text(6)}`] = random.pick(WRONG_TYPES)), "unknown field"),
    () => ((body.n = random.pick(BAD_N)), `n ${JSON.stringify(body.n)}`),
    () => ((body.quality = random.pick(["ultra", "best", "0", 5, []])), "bad quality"),
    () => ((body.response_format = random.pick(["png", "", "b64", "json", 1])), "bad response_format"),
    () => ((body[field] = random.pick(WRONG_TYPES)), `${field} of the wrong type`),
    () => (delete body[random.pick(["model", "prompt"])], "missing required field"),
    () => {
      const named = random.pick(["size", "response_format", "model", "quality"]);
      body[named] = prototypeName(random);
      return `${named} named like a prototype member`;
    },
    () => {
      const named = random.pick(["prompt", "model", "size", "quality", "response_format"]);
      body[named] = illFormedText(random);
      return `${named} with an unpaired surrogate`;
    },
    () => ((body.prompt = ""), "empty prompt"),
  ];
  return random.pick(defects)();
}

function brokenJson(random: Random): string {
  const text = JSON.stringify(validBody(random));
  const choices = [
    () => text.slice(0, random.int(text.length)),
    () => text.replace(/"/g, "'"),
    () => text.replace(/:/, ""),
    () => `${text},`,
    () => `{${random.text(30)}`,
    () => "[".repeat(random.pick([1_000, 50_000, 120_000])) + "]".repeat(random.pick([0, 1_000, 50_000, 120_000])),
    () => '{"a":'.repeat(random.pick([1_000, 20_000, 60_000])) + "1" + "}".repeat(random.pick([0, 1_000, 20_000, 60_000])),
    () => `{"model":${"[".repeat(30_000)}${"]".repeat(30_000)},"prompt":"x"}`,
    () => random.pick(["null", "true", "42", '"beta"', "[]", "[{}]", "{}"]),
    () => '{"__proto__":{"polluted":1},"model":"beta","prompt":"x"}',
    () => `\ufeff${random.text(20)}`,
  ];
  return random.pick(choices)();
}

function badAuthorization(random: Random, key: string): string | undefined {
  const options = [
    () => undefined,
    () => "",
    () => "Bearer",
    () => "Bearer ",
    () => `Basic ${Buffer.from(`user:${key}`).toString("base64")}`,
    () => key,
    () => `Token ${key}`,
    () => `Bearer ${key} extra`,
    () => `Bearer ${key.slice(0, -1)}${key.endsWith("A") ? "B" : "A"}`,
    () => `Bearer td-${"a".repeat(random.pick([1, 43, 5000]))}`,
    () => `Bearer sk-${random.text(10).replace(/[^\x21-\x7e]/g, "z")}`,
    () => `Bearer ${Buffer.from("td-\u00ff\u00fe\u00e9", "latin1").toString("latin1")}`,
    () => `Bearer\t\t${key.toUpperCase()}`,
  ];
  return random.pick(options)();
}

const jsonHeaders = (key: string) => ({ "content-type": "application/json", authorization: `Bearer ${key}` });

function authCase(random: Random, key: string): HttpCase {
  const authorization = badAuthorization(random, key);
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (authorization !== undefined) headers.authorization = authorization;
  // The body may be perfectly valid: the key alone must stop it.
  return { kind: "http", label: "bad authorization", method: "POST", path: "/v1/images/generations", headers, body: JSON.stringify(validBody(random)) };
}

function bodyCase(random: Random, key: string): HttpCase {
  const headers: Record<string, string> = jsonHeaders(key);
  if (random.chance(0.2)) headers["content-type"] = random.pick(CONTENT_TYPES);
  if (headers["content-type"] === "") delete headers["content-type"];
  if (random.chance(0.05)) headers["idempotency-key"] = `fuzz-${random.int(1e9)}`;
  if (random.chance(0.3)) return { kind: "http", label: "broken JSON", method: "POST", path: "/v1/images/generations", headers, body: brokenJson(random) };
  const body = validBody(random);
  addNoise(random, body);
  const defect = addDefect(random, body);
  return { kind: "http", label: defect, method: "POST", path: "/v1/images/generations", headers, body: JSON.stringify(body) };
}

function sizeOfBodyCase(random: Random, key: string): HttpCase {
  const bodies = ["", " ", "\n", "x".repeat(300_000), JSON.stringify({ model: "beta", prompt: "x".repeat(1_048_576), size: "0x0" }), "\u0000".repeat(1000)];
  return { kind: "http", label: "empty or huge body", method: "POST", path: "/v1/images/generations", headers: jsonHeaders(key), body: random.pick(bodies) };
}

const METHODS = ["GET", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD", "TRACE", "POST", "PROPFIND", "SEARCH", "PURGE", "LOCK", "MKCOL"];
const ODD_PATHS = [
  "/", "/v1", "/v1/", "/v1/images", "/v1/images/generations/", "/V1/images/generations", "/v1/images//generations", "/v1/images/generations%20",
  "/v1/images/%2e%2e/generations", "/v1/images/generations;x", "/v1/images/edits", "/v1/images/variations", "/api/cost/request/",
  "/api/cost/request/req_doesnotexist0000000000", "/api/cost/request/%", "/api/cost/request/%zz", "/api/cost/request/%ff%fe",
  "/v1/files/x.png", "/v1/files/img_aaaaaaaaaaaa.png?expires=1e400&sig=x", "/v1/files/img_aaaaaaaaaaaa.png", "/v1/files/%E0%A4%A.png",
  "/v1/images/generations/req_nope", "/v1/chat/completions", "/.env", "/%00", "/v1/models/no-such-model", "/v1/models/constructor", "/healthz/x", "/metrics/x",
  "/v1/files/img_aaaaaaaaaaaa.png?expires=+1&sig=x", "/v1/files/img_aaaaaaaaaaaa.png?expires=0x10&sig=x", "/v1/files/img_aaaaaaaaaaaa.png?expires=1&expires=2&sig=x",
  "/v1/files/img_aaaaaaaaaaaa.png?expires=1&sig=a&sig=b", "/v1/files/constructor.png?expires=1&sig=x", "/v1/images/generations/__proto__",
];

/** Paths and methods that are not routes. GET and HEAD never go to the routes that exist for them. */
function routeCase(random: Random, key: string): HttpCase {
  let path = random.pick(ODD_PATHS);
  if (random.chance(0.1)) path = `/${"a".repeat(random.pick([200, 2_000, 20_000]))}`;
  if (random.chance(0.1)) path = `/api/cost/request/${"r".repeat(random.pick([101, 500]))}`;
  if (random.chance(0.1)) path += `?${encodeURIComponent(random.text(30))}`;
  let method = random.pick(METHODS);
  if (method === "POST" && path.split("?")[0] === "/v1/images/generations/") method = "PUT";
  const headers: Record<string, string> = random.chance(0.5) ? jsonHeaders(key) : {};
  if (random.chance(0.05)) headers["x-big"] = "h".repeat(20_000);
  // The body has a defect too: should an odd path ever reach the generation route, it still must not charge.
  const invalid = validBody(random);
  addDefect(random, invalid);
  const body = ["GET", "HEAD"].includes(method) ? undefined : JSON.stringify(invalid);
  return { kind: "http", label: `${method} odd path`, method, path, headers, body };
}

function rawCase(random: Random): RawCase {
  const options = [
    "FOO / HTTP/1.1\r\nHost: x\r\n\r\n",
    "get /v1/models HTTP/1.1\r\nHost: x\r\n\r\n",
    "GET /v1/models HTTQ/1.1\r\nHost: x\r\n\r\n",
    "POST /v1/images/generations HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n",
    "POST /v1/images/generations HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    "GET /v1/models HTTP/1.1\r\nHost: x\r\nNoColonHere\r\n\r\n",
    "GET /v1/models HTTP/1.1\r\nHost : x\r\n\r\n",
    "GET /v1/models HTTP/1.1\r\nHost: x\r\nX-Bad: a\u0001b\r\n\r\n",
    "\u0016\u0003\u0001\u0002\u0000\u0001\u0000\u0001\u00fc\u0003\u0003garbage\r\n\r\n",
    `GET /${"a".repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`,
  ];
  return { kind: "raw", label: "malformed HTTP", bytes: random.pick(options) };
}

/** A /v1 body with noise and one defect (the playground takes the same fields). */
function invalidImageBody(random: Random): Record<string, unknown> {
  const body = validBody(random);
  addNoise(random, body);
  addDefect(random, body);
  return body;
}

function makeCase(random: Random, key: string, sessions: ConsoleSessions): FuzzCase {
  const roll = random.next();
  if (roll < 0.15) return authCase(random, key);
  if (roll < 0.5) return bodyCase(random, key);
  if (roll < 0.54) return sizeOfBodyCase(random, key);
  if (roll < 0.72) return routeCase(random, key);
  if (roll < 0.75) return rawCase(random);
  return consoleCase(random, sessions);
}

// ---- sending and judging ----

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

function sendHttp(base: URL, agent: Agent, fuzz: HttpCase): Promise<Answer> {
  return new Promise((resolve, reject) => {
    // Node's client sends a body with DELETE, OPTIONS or TRACE unframed (no Content-Length, not
    // chunked), so the edge rightly reads it as a next request and refuses that too: a second answer,
    // which the next case sent on this kept-alive socket would then take for its own.
    const headers = fuzz.body === undefined ? fuzz.headers : { "content-length": String(Buffer.byteLength(fuzz.body)), ...fuzz.headers };
    const req = httpRequest({ host: base.hostname, port: base.port, method: fuzz.method, path: fuzz.path, headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString("utf8") }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.setTimeout(30_000, () => req.destroy(new Error("no answer in 30 s")));
    req.end(fuzz.body);
  });
}

/** Raw bytes on a fresh socket; the answer is read until the server closes it. */
function sendRaw(base: URL, fuzz: RawCase): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const socket = connect(Number(base.port), base.hostname, () => socket.write(Buffer.from(fuzz.bytes, "latin1")));
    const chunks: Buffer[] = [];
    socket.setTimeout(30_000, () => socket.destroy(new Error("no answer in 30 s")));
    socket.on("data", (chunk: Buffer) => chunks.push(chunk));
    socket.on("error", reject);
    socket.on("close", () => {
      const text = Buffer.concat(chunks).toString("utf8");
      const [head = "", body = ""] = text.split("\r\n\r\n", 2);
      const [statusLine = "", ...headerLines] = head.split("\r\n");
      const headers: IncomingHttpHeaders = {};
      for (const line of headerLines) headers[line.slice(0, line.indexOf(":")).trim().toLowerCase()] = line.slice(line.indexOf(":") + 1).trim();
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(statusLine)?.[1] ?? 0), headers, body });
    });
  });
}

/** What is wrong with an answer, or null when it is a proper refusal. */
function judge(fuzz: FuzzCase, answer: Answer): string | null {
  if (answer.status < 400 || answer.status > 499) return `status ${answer.status}`;
  const headerId = answer.headers["x-request-id"];
  if (typeof headerId !== "string" || !headerId.startsWith("req_")) return "no x-request-id header";
  if (fuzz.kind === "http" && fuzz.method === "HEAD") return answer.body === "" ? null : "a body on a HEAD answer";
  let parsed: { error?: { message?: unknown; type?: unknown; code?: unknown } };
  try {
    parsed = JSON.parse(answer.body);
  } catch {
    return "the body is not JSON";
  }
  const error = parsed.error;
  if (error?.type !== "gateway_error") return "not the error shape of docs/api.md";
  if (typeof error.code !== "string" || error.code === "") return "no error code";
  const idInMessage = typeof error.message === "string" ? REQUEST_ID_IN_MESSAGE.exec(error.message)?.[1] : undefined;
  if (idInMessage !== headerId) return "the message does not end with the request id of the header";
  return null;
}

function describeCase(fuzz: FuzzCase): string {
  if (fuzz.kind === "raw") return `raw ${JSON.stringify(fuzz.bytes.slice(0, 120))}`;
  const body = fuzz.body === undefined ? "" : ` body ${JSON.stringify(fuzz.body.slice(0, 160))}${fuzz.body.length > 160 ? `… (${fuzz.body.length} chars)` : ""}`;
  return `${fuzz.method} ${fuzz.path.slice(0, 120)} headers ${JSON.stringify(fuzz.headers).slice(0, 200)}${body}`;
}

// ---- the test ----

let stack: TestStack;
let billing: ReturnType<typeof internalClient<typeof BillingService>>;
let accountId: string;
let key: string;
let consoleSessions: { user: ConsoleSession; admin: ConsoleSession };

beforeAll(async () => {
  stack = await startTestStack();
  const auth = internalClient(AuthService, stack.authUrl, stack.internalSecret);
  billing = internalClient(BillingService, stack.billingUrl, stack.internalSecret);
  const { account } = await auth.createAccount({ email: "fuzz@example.test", password: "correct horse battery" });
  accountId = account!.accountId;
  await billing.topUp({ accountId, amountMicros: 5_000_000n, note: "fuzz" });
  key = (await auth.createKey({ accountId, name: "fuzz" })).secret;
  // The console is fuzzed as the fuzz account itself (its balance is the invariant) and as the admin.
  const session = async (email: string, password: string): Promise<ConsoleSession> => {
    const browser = await signedIn(stack.edgeUrl, email, password);
    return { cookie: browser.cookie!, csrfToken: browser.csrfToken! };
  };
  consoleSessions = { user: await session("fuzz@example.test", "correct horse battery"), admin: await session(TEST_ADMIN.email, TEST_ADMIN.password) };
});
afterAll(async () => {
  await stack?.close();
});

describe("hostile input", () => {
  it(`answers ${COUNT} malformed requests with 4xx in the error shape, charging nothing (seed ${SEED})`, { timeout: 600_000 }, async () => {
    const before = (await billing.getBalance({ accountId })).balance!;
    const random = new Random(SEED);
    const sessions: ConsoleSessions = { ...consoleSessions, accountId, invalidImageBody: () => invalidImageBody(random) };
    const cases = Array.from({ length: COUNT }, () => makeCase(random, key, sessions));
    const base = new URL(stack.edgeUrl);
    const agent = new Agent({ keepAlive: true, maxSockets: PARALLEL });
    const failures: string[] = [];
    const statuses = new Map<string, number>();
    let next = 0;
    await Promise.all(
      Array.from({ length: PARALLEL }, async () => {
        for (let index = next++; index < cases.length; index = next++) {
          const fuzz = cases[index]!;
          const problem = await (fuzz.kind === "raw" ? sendRaw(base, fuzz) : sendHttp(base, agent, fuzz)).then(
            (answer) => {
              const tally = `${answer.status} ${answer.body.match(/"code":"([a-z_]+)"/)?.[1] ?? "-"}`;
              statuses.set(tally, (statuses.get(tally) ?? 0) + 1);
              const wrong = judge(fuzz, answer);
              return wrong && `${wrong}: ${answer.status} ${answer.body.slice(0, 200)}`;
            },
            (error: Error) => `no answer (${error.message})`,
          );
          if (problem && failures.length < 20) failures.push(`case ${index} [${fuzz.label}] ${describeCase(fuzz)} -> ${problem}`);
        }
      }),
    );
    agent.destroy();
    console.info(`fuzz seed ${SEED}, ${COUNT} cases; answers by status and code:`, Object.fromEntries([...statuses].sort()));
    expect(failures, `FUZZ_SEED=${SEED} reproduces this run`).toEqual([]);

    // Nothing charged, nothing even held: the balance is as it was and billing has no cost record.
    const after = (await billing.getBalance({ accountId })).balance!;
    expect([after.balanceMicros, after.heldMicros], `FUZZ_SEED=${SEED}`).toEqual([before.balanceMicros, before.heldMicros]);
    const records = await stack.db.query<{ count: bigint }>("SELECT count(*) AS count FROM billing.cost_records WHERE account_id = $1", [accountId]);
    expect(records.rows[0]!.count, `FUZZ_SEED=${SEED}`).toBe(0n);

    // And the edge is still up: a proper request still works.
    const health = await fetch(`${stack.edgeUrl}/healthz`);
    expect(health.status).toBe(200);
  });
});
