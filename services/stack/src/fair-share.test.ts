import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import { usingServer } from "@orvado/testkit";
import { runOrvado, startTestStack, type TestStack } from "./harness.ts";

// Fair share over real HTTP (issue G item 6): the per-account concurrent-job limit and
// the per-key requests-per-minute limit, set with the real `orvado` CLI, answered as
// 429 in the documented error shape with Retry-After, holding and charging nothing.
// With PostgreSQL (TEST_DATABASE_URL) two whole stacks, every service twice, share
// one database, as replicas do, and the limit holds across them; on in-memory PGlite
// (which one process owns) both names point at the one stack.

const JOB_TIMEOUT_MS = 8_000;
// Longer than the job limit: these jobs end by timing out, which must free their slots.
const STUCK_PROMPT = "a slow lighthouse [sandbox:delay=600000]";

let first: TestStack;
let second: TestStack;

beforeAll(async () => {
  const env = { GENERATION_JOB_TIMEOUT_MS: String(JOB_TIMEOUT_MS) };
  first = await startTestStack(env);
  second = usingServer() ? await startTestStack(env, { databaseUrl: first.databaseUrl }) : first;
}, 60_000);

afterAll(async () => {
  if (second && second !== first) await second.close();
  await first?.close();
}, 60_000);

// biome-ignore lint/suspicious/noExplicitAny: the test reads fields of a JSON answer whose shape it asserts
const json = (response: Response): Promise<any> => response.json();

async function fundedAccount(usd: string, ...keyFlags: string[]): Promise<{ accountId: string; key: string }> {
  const created = await runOrvado(first, "accounts", "create", "--email", `fair-${randomUUID()}@example.test`, "--password", "a long password");
  const accountId = created.json.account_id as string;
  expect((await runOrvado(first, "accounts", "topup", "--account", accountId, "--usd", usd)).code).toBe(0);
  const key = await runOrvado(first, "keys", "create", "--account", accountId, ...keyFlags);
  expect(key.code).toBe(0);
  return { accountId, key: key.json.key as string };
}

const generate = (stack: TestStack, key: string, prompt = "a red fox in the snow") =>
  fetch(`${stack.edgeUrl}/v1/images/generations`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
    body: JSON.stringify({ model: "beta", prompt, size: "1024x1024" }),
  });

async function leasesOf(accountId: string): Promise<number> {
  const { rows } = await first.db.query<{ n: bigint }>("SELECT count(*) AS n FROM generation.job_leases WHERE account_id = $1", [accountId]);
  return Number(rows[0]!.n);
}

async function until(condition: () => Promise<boolean>, what: string): Promise<void> {
  for (let attempt = 0; attempt < 800; attempt += 1) {
    if (await condition()) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`never happened: ${what}`);
}

const balanceOf = async (accountId: string) => {
  const shown = await runOrvado(first, "accounts", "show", "--account", accountId);
  return { balance: shown.json.balance_usd as string, held: shown.json.held_usd as string };
};

describe("the per-account concurrent-job limit over HTTP, across two stacks on one database", () => {
  it("refuses the job over the limit with 429 concurrent_job_limit and Retry-After, holds nothing, and frees the slots of jobs that time out", async () => {
    const greedy = await fundedAccount("1");
    const limited = await runOrvado(first, "accounts", "limits", "--account", greedy.accountId, "--max-concurrent", "2");
    expect(limited.code).toBe(0);
    expect(limited.json).toMatchObject({ max_concurrent_jobs: 2, requests_per_minute: null });

    // One stuck job through each stack's edge and generation.
    const stuck = [generate(first, greedy.key, STUCK_PROMPT), generate(second, greedy.key, STUCK_PROMPT)];
    await until(async () => (await leasesOf(greedy.accountId)) === 2, "both stuck jobs admitted");
    // A job is admitted (its lease) before billing holds its price: wait for both holds too.
    await until(async () => (await balanceOf(greedy.accountId)).held === "0.040000", "both stuck jobs held");
    const before = await balanceOf(greedy.accountId);

    for (const stack of [first, second]) {
      const refused = await generate(stack, greedy.key);
      expect(refused.status).toBe(429);
      expect(refused.headers.get("retry-after")).toMatch(/^[1-9]\d*$/);
      const requestId = refused.headers.get("x-gateway-request-id");
      const body = await json(refused);
      expect(body.error).toMatchObject({ type: "gateway_error", code: "concurrent_job_limit" });
      expect(body.error.message).toContain(`(request id: ${requestId})`);
      // Nothing was reserved for it: no cost record, no change to the balance or the hold.
      expect((await fetch(`${first.edgeUrl}/api/cost/request/${requestId}`)).status).toBe(404);
    }
    expect(await balanceOf(greedy.accountId)).toEqual(before);

    // Another tenant is not locked out.
    const other = await fundedAccount("1");
    expect((await generate(second, other.key)).status).toBe(200);

    // The stuck jobs time out (502, not charged); their slots are free again.
    const ended = await Promise.all(stuck);
    expect(ended.map((response) => response.status)).toEqual([502, 502]);
    expect(await leasesOf(greedy.accountId)).toBe(0);
    expect((await generate(first, greedy.key)).status).toBe(200);
  }, 90_000);
});

describe("the per-key requests-per-minute limit over HTTP", () => {
  it("answers 429 rate_limit_exceeded with Retry-After once the key has started its rpm this minute, on either stack", async () => {
    const client = await fundedAccount("1", "--rpm", "2");
    const answers: Response[] = [];
    // Sequential, so every request lands in one minute's window or the next; at most 2 per window pass.
    for (let i = 0; i < 3; i++) answers.push(await generate(i % 2 === 0 ? first : second, client.key));
    const limitedAnswers = answers.filter((response) => response.status === 429);
    const passed = answers.filter((response) => response.status === 200);
    // Three requests can straddle a minute boundary: then all three pass, and a fourth and fifth decide.
    if (limitedAnswers.length === 0) for (let i = 0; i < 2; i++) answers.push(await generate(first, client.key));
    const refused = answers.find((response) => response.status === 429);
    expect(refused, `statuses ${answers.map((r) => r.status)}`).toBeDefined();
    expect(passed.length).toBeGreaterThanOrEqual(2);
    const seconds = Number(refused!.headers.get("retry-after"));
    expect(seconds).toBeGreaterThanOrEqual(1);
    expect(seconds).toBeLessThanOrEqual(60);
    expect((await json(refused!)).error).toMatchObject({ type: "gateway_error", code: "rate_limit_exceeded" });
  }, 60_000);
});
