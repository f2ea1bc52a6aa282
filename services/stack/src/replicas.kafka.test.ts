import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import { AuthService, BillingService } from "@orvado/proto";
import { internalClient } from "@orvado/rpc";
import { startProcessesOnKafka } from "./e2e-stack.ts";
import { ConsoleBrowser } from "./console-browser.ts";

// Issue H §5: the limits hold across replicas. The services run as separate
// processes on PostgreSQL and Kafka: two edges over real HTTP, each calling its
// own auth and generation replica (edge#2 → auth#2, generation#2), every
// replica sharing one database. Requests alternate between the two edges.

type Stack = Awaited<ReturnType<typeof startProcessesOnKafka>>;
const SIGN_IN_LIMIT = 4;
let stack: Stack;
let edges: string[];
let auth: ReturnType<typeof internalClient<typeof AuthService>>;
let billing: ReturnType<typeof internalClient<typeof BillingService>>;

beforeAll(async () => {
  stack = await startProcessesOnKafka({ AUTH_SIGNIN_MAX_FAILURES_PER_ACCOUNT: String(SIGN_IN_LIMIT), AUTH_SIGNIN_MAX_FAILURES_PER_IP: "1000" });
  const { processes } = stack;
  await processes.startReplica("auth", 2);
  await processes.startReplica("generation", 2);
  await processes.startReplica("edge", 2, { ORVADO_AUTH_URL: processes.urlOf("auth#2"), ORVADO_GENERATION_URL: processes.urlOf("generation#2") });
  edges = [stack.edgeUrl, processes.urlOf("edge#2")];
  auth = internalClient(AuthService, stack.authUrl, stack.internalSecret);
  billing = internalClient(BillingService, stack.billingUrl, stack.internalSecret);
}, 180_000);

afterAll(async () => {
  await stack?.close();
});

async function fundedAccount(options: { limits?: { maxConcurrentJobs?: number; requestsPerMinute?: number }; keyRpm?: number } = {}) {
  const email = `replica-${randomUUID()}@example.test`;
  const { account } = await auth.createAccount({ email, password: "replica-password-1" });
  const accountId = account!.accountId;
  await billing.topUp({ accountId, amountMicros: 10_000_000n, note: "replicas test" });
  if (options.limits) await auth.setAccountLimits({ accountId, limits: options.limits });
  const { secret } = await auth.createKey({ accountId, name: "replicas", requestsPerMinute: options.keyRpm });
  return { accountId, email, key: secret };
}

const generate = (edge: string, key: string, prompt: string, headers: Record<string, string> = {}) =>
  fetch(`${edge}/v1/images/generations`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${key}`, ...headers },
    body: JSON.stringify({ model: "beta", prompt, response_format: "b64_json" }),
  });

/** Waits for the next clock minute when less than 15 s of this one is left. */
async function intoFreshMinute(): Promise<void> {
  const { rows } = await stack.db.query<{ left_ms: number }>("SELECT (60000 - EXTRACT(EPOCH FROM clock_timestamp()) * 1000 % 60000)::int AS left_ms");
  const leftMs = rows[0]!.left_ms;
  if (leftMs < 15_000) await new Promise((resolve) => setTimeout(resolve, leftMs + 100));
}

async function countByStatus(responses: Response[]): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const response of responses) {
    const code = response.status === 200 ? "200" : `${response.status} ${((await response.json()) as { error: { code: string } }).error.code}`;
    counts[code] = (counts[code] ?? 0) + 1;
  }
  return counts;
}

describe("limits across two edges and two generation replicas (processes, HTTP, PostgreSQL, Kafka)", () => {
  it("holds an account's concurrent-job limit across generation replicas", async () => {
    const { key } = await fundedAccount({ limits: { maxConcurrentJobs: 2 } });
    const answers = await Promise.all(Array.from({ length: 6 }, (_, i) => generate(edges[i % 2]!, key, `slow ${i} [sandbox:delay=3000]`)));
    expect(await countByStatus(answers)).toEqual({ "200": 2, "429 concurrent_job_limit": 4 });
  });

  it("holds a key's requests-per-minute limit across edges", async () => {
    const { key } = await fundedAccount({ keyRpm: 3 });
    // The windows are clock minutes: start early in one, so all six requests fall in the same window.
    await intoFreshMinute();
    const answers: Response[] = [];
    for (let i = 0; i < 6; i += 1) answers.push(await generate(edges[i % 2]!, key, `quick ${i}`));
    expect(await countByStatus(answers)).toEqual({ "200": 3, "429 rate_limit_exceeded": 3 });
  });

  it("holds the sign-in limit across edges and auth replicas", async () => {
    const { email } = await fundedAccount();
    const statuses = await Promise.all(
      Array.from({ length: 20 }, (_, i) => new ConsoleBrowser(edges[i % 2]!).signIn(email, "not the password").then((answer) => answer.status)),
    );
    expect(statuses.filter((status) => status === 401)).toHaveLength(SIGN_IN_LIMIT);
    expect(statuses.filter((status) => status === 429)).toHaveLength(20 - SIGN_IN_LIMIT);
  });

  it("runs one job for an Idempotency-Key sent to both edges at once, and both get its answer", async () => {
    const { accountId, key } = await fundedAccount();
    const idempotency = { "idempotency-key": `both-edges-${randomUUID()}` };
    const [first, second] = await Promise.all(edges.map((edge) => generate(edge, key, "once [sandbox:delay=1500]", idempotency)));
    expect([first!.status, second!.status]).toEqual([200, 200]);
    expect(first!.headers.get("x-request-id")).toBe(second!.headers.get("x-request-id"));
    const { rows } = await stack.db.query("SELECT request_id FROM generation.jobs WHERE account_id = $1", [accountId]);
    expect(rows).toHaveLength(1);
  });

  it("stops a revoked key on every edge within 2 s", async () => {
    const { accountId, key } = await fundedAccount();
    for (const edge of edges) expect((await generate(edge, key, "before")).status).toBe(200);
    const { keys } = await auth.listKeys({ accountId });
    await auth.revokeKey({ accountId, keyId: keys[0]!.keyId });
    // The edge trusts a verified key for at most EDGE_KEY_CACHE_MS (1 s): 2 s is the documented bound.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    for (const edge of edges) expect((await generate(edge, key, "after")).status).toBe(401);
  });
});
